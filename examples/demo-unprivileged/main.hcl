# What `make demo` runs when it is not root: the flagship job with the log
# sink in place of the eBPF map (creating BPF maps needs root or CAP_BPF).
# kubernetes -> extract -> debounce -> grace_period -> log (JSON lines).

variable "kubeconfig" {
  type    = string
  default = "~/.kube/config"
}

variable "audit" {
  type    = string
  default = "/var/lib/pipeline/audit.jsonl"
}

variable "nats_listen" {
  type    = string
  default = "127.0.0.1:4222"
}

variable "nats_store" {
  type    = string
  default = "/var/lib/pipeline/nats"
}

variable "grace" {
  type    = string
  default = "5s"
}

variable "allowed_log" {
  type        = string
  default     = "allowed.jsonl"
  description = "File the log sink appends each change of the allow-list to."
}

cluster "local" {
  kubeconfig = var.kubeconfig
}

source "kubernetes" "backend_pods" {
  cluster       = cluster.local
  resource      = "pods"
  selector      = "app=backend"
  ignore_fields = ["{.metadata.managedFields}"]
}

transform "extract" "pod_ips" {
  input    = source.kubernetes.backend_pods
  where    = try(object.status.phase, "") == "Running"
  for_each = try(object.status.podIPs, [])
  key      = each.value.ip
  value = {
    pod       = object.metadata.name
    namespace = object.metadata.namespace
  }
}

transform "debounce" "batch" {
  input    = transform.extract.pod_ips
  interval = "100ms"
}

transform "grace_period" "drain" {
  input = transform.debounce.batch
  delay = var.grace
}

sink "log" "allowed" {
  input  = transform.grace_period.drain
  path   = var.allowed_log
  format = "json"
}

# Every change the allow-list goes through, and the engine's own decisions,
# as a hash-chained trail that `pipeline audit verify` checks.
sink "audit" "trail" {
  input = transform.grace_period.drain
  path  = var.audit
  fsync = "always"
}

# The hub side of hub + agents: the pod IPs mirrored into a NATS key-value
# bucket on an embedded server; agents (examples/demo-agent) read it.
sink "nats_kv" "pod_ips" {
  input      = transform.debounce.batch
  bucket     = "pod-ips"
  key_prefix = "v1."
  embedded {
    listen    = var.nats_listen
    store_dir = var.nats_store
  }
}
