source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "nats_kv" "no_server" { # ERROR: Missing NATS server
  input  = source.static.nets
  bucket = "pods"
}

sink "nats_kv" "bad_prefix" {
  input      = source.static.nets
  url        = "nats://localhost:4222"
  bucket     = "pods"
  key_prefix = "v1..x" # ERROR: Invalid key prefix
}

sink "nats_kv" "bad_bucket" {
  input  = source.static.nets
  url    = "nats://localhost:4222"
  bucket = "pods.v1" # ERROR: Invalid bucket name
}

sink "nats_kv" "bad_listen" {
  input  = source.static.nets
  bucket = "pods"
  embedded {
    listen    = "4222" # ERROR: Invalid listen address
    store_dir = "data"
  }
}

sink "nats" "bad_url_type" {
  input   = source.static.nets
  url     = 4222 # ERROR: Incorrect attribute value type
  subject = "x"
}

sink "nats" "half_tls" {
  input     = source.static.nets
  url       = "nats://localhost:4222"
  subject   = "x"
  cert_file = "c.pem" # ERROR: Incomplete client certificate
}

sink "nats" "in_flight" {
  input         = source.static.nets
  url           = "nats://localhost:4222"
  subject       = "x"
  max_in_flight = 0 # ERROR: Value out of range
}
