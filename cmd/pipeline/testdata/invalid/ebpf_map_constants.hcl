source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "ebpf_map" "u16_too_big" {
  input = source.static.nets
  pin   = "/sys/fs/bpf/pipeline/const_a"
  key {
    type = "ipv4"
  }
  value {
    type = "u16"
    from = 70000 # ERROR: Constant does not fit its encoding
  }
}

sink "ebpf_map" "string_too_long" {
  input = source.static.nets
  pin   = "/sys/fs/bpf/pipeline/const_b"
  key {
    type = "ipv4"
  }
  value {
    type = "string(2)"
    from = "abcdef" # ERROR: Constant does not fit its encoding
  }
}

sink "ebpf_map" "not_a_number" {
  input = source.static.nets
  pin   = "/sys/fs/bpf/pipeline/const_c"
  key {
    type = "ipv4"
  }
  value {
    type = "struct"
    field "port" {
      type = "u32"
      from = "not a number" # ERROR: Constant does not fit its encoding
    }
    field "ok" {
      type = "u32"
      from = record.key == "" ? 1 : 2
    }
  }
}
