# What `make demo` runs as an agent: it reads the pod IPs the demo's hub
# mirrors into a NATS key-value bucket (on the hub's embedded server) and
# logs the allow-list it would program. A real agent puts an ebpf_map sink
# here (see examples/agent); no agent watches the API server.

variable "nats_url" {
  type    = string
  default = "nats://127.0.0.1:4222"
}

variable "agent_log" {
  type    = string
  default = "/var/log/pipeline/agent.jsonl"
}

source "nats_kv" "pod_ips" {
  url        = var.nats_url
  bucket     = "pod-ips"
  key_prefix = "v1."
}

sink "log" "allowed" {
  input  = source.nats_kv.pod_ips
  path   = var.agent_log
  format = "json"
}
