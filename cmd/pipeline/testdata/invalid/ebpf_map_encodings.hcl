source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "ebpf_map" "lpm_needs_prefix" {
  input = source.static.nets
  pin   = "/sys/fs/bpf/pipeline/a"
  type  = "lpm_trie" # ERROR: Key encoding does not fit the map type
  key {
    type = "ipv4"
  }
  value {
    type = "u32"
    from = 1
  }
}

sink "ebpf_map" "array_needs_u32" {
  input = source.static.nets
  pin   = "/sys/fs/bpf/pipeline/b"
  type  = "array" # ERROR: Key encoding does not fit the map type
  key {
    type = "ipv6"
  }
  value {
    type = "u8"
    from = 1
  }
}

sink "ebpf_map" "prefix_in_hash" {
  input = source.static.nets
  pin   = "/sys/fs/bpf/pipeline/c"
  type  = "hash" # ERROR: Key encoding does not fit the map type
  key {
    type = "ipv4_prefix"
  }
  value {
    type = "u32"
    from = 1
  }
}

sink "ebpf_map" "bad_types" {
  input       = source.static.nets
  pin         = "pipeline/relative" # ERROR: Invalid pin path
  max_entries = 0 # ERROR: Invalid max_entries
  key {
    type       = "ipv4"
    byte_order = "be" # ERROR: Invalid encoding
  }
  value { # ERROR: Missing value source
    type = "u64"
  }
}

sink "ebpf_map" "sizes" {
  input = source.static.nets
  pin   = "/sys/fs/bpf/pipeline/d"
  key {
    type = "string(0)" # ERROR: Invalid encoding
  }
  value {
    type = "u128" # ERROR: Invalid encoding
    from = 1
  }
}

sink "ebpf_map" "structs" {
  input = source.static.nets
  pin   = "/sys/fs/bpf/pipeline/e"
  key {
    type = "struct" # ERROR: Empty struct
  }
  value {
    type = "struct"
    field "port" {
      type = "u16"
      from = 80
    }
    field "port" { # ERROR: Duplicate struct field
      type = "u16"
      from = 443
    }
    field "inner" {
      type = "struct" # ERROR: Nested struct
    }
    field "flags" { # ERROR: Missing field source
      type = "u8"
    }
  }
}

sink "ebpf_map" "roots" {
  input = source.static.nets
  pin   = "/sys/fs/bpf/pipeline/f"
  key {
    type = "ipv4"
    from = object.key # ERROR: Invalid reference
  }
  value {
    type = "u32"
    from = record.value.port
  }
}

sink "ebpf_map" "no_blocks" { # ERROR: Missing key block # ERROR: Missing value block
  input = source.static.nets
  pin   = "/sys/fs/bpf/pipeline/g"
}
