# Fan-in: the pod IPs of a namespace and a few static CIDRs kept in one LPM
# map by one sink. With two sinks on one pin, each sink's prune would
# delete the other's keys; one sink with inputs = [...] prunes only what
# neither input wants, and only once both have synced.
#
# Ask a running instance why a key is (or is not) in the map:
#   pipeline explain 10.244.1.7/32

variable "kubeconfig" {
  type    = string
  default = "~/.kube/config"
}

cluster "prod" {
  kubeconfig = var.kubeconfig
}

source "kubernetes" "pods" {
  cluster   = cluster.prod
  resource  = "pods"
  namespace = "shop"
  selector  = "app=backend"
}

transform "extract" "pod_ips" {
  input = source.kubernetes.pods
  where = try(object.status.phase, "") == "Running" && try(object.status.podIP, "") != ""
  key   = "${object.status.podIP}/32"
  value = { from = "pod", name = object.metadata.name }
}

transform "grace_period" "drain" {
  input = transform.extract.pod_ips
  delay = "30s"
}

source "static" "networks" {
  records = {
    "10.0.0.0/8"     = { from = "static", name = "internal" }
    "192.168.0.0/16" = { from = "static", name = "office" }
  }
}

sink "ebpf_map" "allowed" {
  # A key both inputs hold lives while either wants it; when their values
  # differ, the static declaration wins.
  inputs      = [source.static.networks, transform.grace_period.drain]
  on_conflict = "first"
  pin         = "/sys/fs/bpf/pipeline/allowed_networks"
  type        = "lpm_trie"
  max_entries = 65536
  key {
    type = "ipv4_prefix"
  }
  value {
    type = "u8"
    from = 1
  }
}
