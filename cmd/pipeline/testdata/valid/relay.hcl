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
