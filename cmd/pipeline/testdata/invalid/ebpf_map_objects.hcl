# An eBPF map stores records: objects from kubernetes need an extract first.
source "kubernetes" "pods" {
  resource = "pods"
}

sink "ebpf_map" "pods" {
  input = source.kubernetes.pods # ERROR: Type mismatch between nodes
  pin   = "/sys/fs/bpf/pipeline/pods"
  key {
    type = "ipv4"
  }
  value {
    type = "u32"
    from = 1
  }
}
