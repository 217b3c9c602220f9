source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "nats" "object_root" {
  input   = source.static.nets
  url     = "nats://localhost:4222"
  subject = "x.${object.key}" # ERROR: Invalid reference
}

sink "nats" "typo" {
  input   = source.static.nets
  url     = "nats://localhost:4222"
  subject = "x.${recrd.key}" # ERROR: Invalid reference
}

sink "nats" "node_reference" {
  input   = source.static.nets
  url     = "nats://localhost:4222"
  subject = source.static.nets # ERROR: Invalid reference
}

sink "nats" "unknown_function" {
  input   = source.static.nets
  url     = "nats://localhost:4222"
  subject = "x.${uper(record.key)}" # ERROR: Call to unknown function
}

sink "nats" "ok" {
  input   = source.static.nets
  url     = "nats://localhost:4222"
  subject = "x.${record.key}"
}
