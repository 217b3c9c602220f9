# The flagship job: keep an eBPF allow-list of backend pod IPs in sync with
# Kubernetes, drain removals after a grace period, mirror the list to NATS and
# audit every change.

variable "kubeconfig" {
  type        = string
  default     = "~/.kube/config"
  description = "Kubeconfig of the cluster to watch."
}

variable "grace" {
  type    = string
  default = "30s"
}

cluster "prod" {
  kubeconfig = var.kubeconfig
}

source "kubernetes" "backend_pods" {
  cluster       = cluster.prod
  resource      = "pods"
  namespace     = ""
  selector      = "app=backend,env in (prod,staging)"
  ignore_fields = ["{.metadata.managedFields}", "{.spec.containers}"]
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
  max_wait = "1s"
}

transform "grace_period" "drain" {
  input = transform.debounce.batch
  delay = var.grace
}

sink "ebpf_map" "allowed" {
  input       = transform.grace_period.drain
  pin         = "/sys/fs/bpf/pipeline/allowed"
  type        = "hash"
  max_entries = 65536
  key {
    type = "ip"
  }
  value {
    type = "u32"
    from = 1
  }
}

sink "nats" "events" {
  input     = transform.grace_period.drain
  url       = "nats://127.0.0.1:4222"
  subject   = "pods.allowed.${replace(record.key, ".", "_")}"
  jetstream = true
}

sink "audit" "trail" {
  input    = transform.grace_period.drain
  path     = "/var/log/pipeline/audit.jsonl"
  max_size = "100MiB"
}
