source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

source "static" "forgotten" { # WARNING: Unused source
  records = { "192.168.0.0/16" = { network = "office" } }
}

source "nats_kv" "remote" { # WARNING: Unused source
  url    = "nats://localhost:4222"
  bucket = "pods"
}

sink "log" "out" {
  input = source.static.nets
}
