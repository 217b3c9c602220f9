source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "log" "out" {
  input  = source.static.nets
  prune  = "perhaps" # ERROR: Incorrect attribute value type
  resync = "1h30x" # ERROR: Invalid duration
}
