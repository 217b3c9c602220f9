# The scale pattern: every node reads the state one leader wrote to a NATS
# key-value bucket and mirrors it (here into another bucket).
source "nats_kv" "shared" {
  url        = "nats://nats.pipeline.svc:4222"
  bucket     = "pod-ips"
  key_prefix = "prod/"
}

sink "nats_kv" "mirror" {
  input   = source.nats_kv.shared
  url     = "nats://localhost:4222"
  bucket  = "pod-ips-mirror"
  storage = "memory"
}

sink "nats_kv" "hub" {
  input      = source.nats_kv.shared
  bucket     = "hub"
  key_prefix = "v1."
  replicas   = 3
  max_bytes  = "1GiB"
  embedded {
    listen    = "0.0.0.0:4222"
    store_dir = "nats-data"
  }
}

sink "nats" "events" {
  input     = source.nats_kv.shared
  url       = ["nats://a:4222", "nats://b:4222"]
  subject   = "pods.${record.value.ns}"
  jetstream = true
  token     = "not-logged"
}
