source "static" "nets" {
  records = ["10.0.0.0/8", "192.168.0.0/16"] # ERROR: Invalid records
}

sink "audit" "trail" {
  input          = source.static.nets
  path           = ["audit.jsonl"] # ERROR: Incorrect attribute value type
  max_files      = "many" # ERROR: Incorrect attribute value type
  include_values = "sometimes" # ERROR: Incorrect attribute value type
  prune          = 1 # ERROR: Incorrect attribute value type
}

sink "nats_kv" "state" {
  input   = source.static.nets
  url     = "nats://localhost:4222"
  bucket  = { name = "pods" } # ERROR: Incorrect attribute value type
  history = 1.5 # ERROR: Invalid value for history
}
