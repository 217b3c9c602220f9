source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "audit" "unknown_unit" {
  input    = source.static.nets
  path     = "a.jsonl"
  max_size = "100XB" # ERROR: Invalid size
}

sink "audit" "negative" {
  input    = source.static.nets
  path     = "b.jsonl"
  max_size = "-1MiB" # ERROR: Invalid size
}

sink "audit" "huge" {
  input    = source.static.nets
  path     = "c.jsonl"
  max_size = "99999999TiB" # ERROR: Invalid size
}

sink "audit" "words" {
  input    = source.static.nets
  path     = "d.jsonl"
  max_size = "a lot" # ERROR: Invalid size
}

sink "audit" "negative_number" {
  input    = source.static.nets
  path     = "e.jsonl"
  max_size = -5 # ERROR: Invalid size
}
