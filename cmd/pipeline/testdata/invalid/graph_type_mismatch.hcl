# Kubernetes emits objects; nats_kv and ebpf_map store records.
source "kubernetes" "pods" {
  resource = "pods"
}

sink "nats_kv" "direct" {
  input  = source.kubernetes.pods # ERROR: Type mismatch between nodes
  url    = "nats://localhost:4222"
  bucket = "pods"
}

# A transform that emits what it receives passes objects on.
transform "debounce" "batch" {
  input = source.kubernetes.pods
}

transform "filter" "running" {
  input = transform.debounce.batch
  where = record.value.status.phase == "Running"
}

sink "nats_kv" "through" {
  input   = transform.filter.running # ERROR: Type mismatch between nodes
  url     = "nats://localhost:4222"
  bucket  = "pods"
  storage = "disk" # ERROR: Invalid value for storage
}

# Turning objects into records first is right.
transform "extract" "ips" {
  input = transform.filter.running
  key   = object.status.podIP
}

sink "nats_kv" "ok" {
  input  = transform.extract.ips
  url    = "nats://localhost:4222"
  bucket = "pods"
}

# A mismatched input does not hide the sink's own errors: both show at once.
sink "ebpf_map" "direct" {
  input       = source.kubernetes.pods # ERROR: Type mismatch between nodes
  pin         = "/sys/fs/bpf/pipeline/direct"
  type        = "lpm_trie" # ERROR: Key encoding does not fit the map type
  max_entries = 16
  key {
    type = "ipv4"
  }
  value {
    type = "u8"
    from = 1
  }
}
