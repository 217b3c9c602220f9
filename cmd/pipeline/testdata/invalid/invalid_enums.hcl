source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "log" "yaml" {
  input  = source.static.nets
  format = "yaml" # ERROR: Invalid value for format
}

sink "log" "typo" {
  input  = source.static.nets
  format = "jsno" # ERROR: Invalid value for format
}

sink "nats_kv" "state" {
  input   = source.static.nets
  url     = "nats://localhost:4222"
  bucket  = "pods"
  storage = "memroy" # ERROR: Invalid value for storage
}
