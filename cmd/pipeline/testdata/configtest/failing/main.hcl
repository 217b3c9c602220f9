variable "token" {
  type      = string
  default   = "tok-123456"
  sensitive = true
}

source "static" "nets" {
  records = { "10.0.0.0/8" = { id = 1 } }
}

transform "grace_period" "drain" {
  input = source.static.nets
  delay = "10s"
}

# The directory of the pin does not exist: a config test must not create it.
sink "ebpf_map" "nets" {
  input       = transform.grace_period.drain
  pin         = "/nonexistent-pipeline-test/nets"
  type        = "lpm_trie"
  max_entries = 16
  key {
    type = "ipv4_prefix"
  }
  value {
    type = "u32"
    from = record.value.id
  }
}

sink "log" "out" {
  input = transform.grace_period.drain
  path  = "/nonexistent-pipeline-test/out.log"
}
