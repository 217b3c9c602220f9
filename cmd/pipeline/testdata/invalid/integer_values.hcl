source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "audit" "trail" {
  input     = source.static.nets
  path      = "audit.jsonl"
  max_files = 2.5 # ERROR: Invalid value for max_files
}

sink "nats_kv" "state" {
  input   = source.static.nets
  url     = "nats://localhost:4222"
  bucket  = "pods"
  history = 1e30 # ERROR: Invalid value for history
}
