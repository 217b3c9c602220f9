# Static CIDR networks, with an id per network, in an LPM trie: the part of a
# firewall policy that does not come from the cluster.

locals {
  office = "192.168.0.0/16"
}

source "static" "networks" {
  records = {
    "10.0.0.0/8"                        = { id = 1, name = "internal" }
    (local.office)                      = { id = 2, name = "office" }
    (cidrsubnet("172.16.0.0/12", 4, 3)) = { id = 3, name = "vpn" }
  }
}

sink "ebpf_map" "networks" {
  input       = source.static.networks
  pin         = "/sys/fs/bpf/pipeline/networks"
  type        = "lpm_trie"
  max_entries = 1024
  key {
    type = "ipv4_prefix"
  }
  value {
    type = "struct"
    field "id" {
      type = "u32"
      from = record.value.id
    }
    field "name" {
      type = "string(16)"
      from = record.value.name
    }
  }
}
