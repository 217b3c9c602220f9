cluster "negative" {
  in_cluster = true
  qps        = -5 # ERROR: Invalid qps
  burst      = -1 # ERROR: Invalid burst
}

source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "log" "a" {
  input = source.static.nets
  path  = "out.log"
}

sink "log" "b" {
  input = source.static.nets
  path  = "./out.log" # ERROR: Resource written by two nodes
}

sink "log" "busy" {
  input  = source.static.nets
  resync = "1ns" # ERROR: Resync too frequent
}

sink "ebpf_map" "one" {
  input = source.static.nets
  pin   = "/sys/fs/bpf/pipeline/shared"
  key {
    type = "ipv4_prefix"
  }
  value {
    type = "u8"
    from = 1
  }
  type = "lpm_trie"
}

sink "ebpf_map" "two" {
  input = source.static.nets
  pin   = "/sys/fs/bpf/pipeline/../pipeline/shared" # ERROR: Resource written by two nodes
  type  = "lpm_trie"
  key {
    type = "ipv4_prefix"
  }
  value {
    type = "u8"
    from = 1
  }
}

sink "ebpf_map" "outside" {
  input       = source.static.nets
  pin         = "/tmp/allowed" # WARNING: Pin path outside the BPF filesystem
  type        = "lpm_trie"
  max_entries = 1.5 # ERROR: Invalid value for max_entries
  key {
    type = "ipv4_prefix"
  }
  value {
    type = "u8"
    from = 1
  }
}
