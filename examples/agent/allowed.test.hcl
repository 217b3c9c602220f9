# Config tests of the agent: `pipeline test examples/agent`. The givens are
# what examples/hub writes to the bucket, as the nats_kv source emits it:
# the key_prefix stripped, escaped characters restored, the JSON decoded.
# Times are virtual: the 30s grace period passes in no real time.

test "the bucket's pod IPs are allowed; a removed one drains after the grace period" {
  given "source.nats_kv.pod_ips" {
    at = "0s"
    add = {
      "10.0.0.7" = { namespace = "shop", node = "node-a", pod = "web-1" }
      "fd00::7"  = { namespace = "shop", node = "node-a", pod = "web-1" }
      "10.0.0.9" = { namespace = "shop", node = "node-b", pod = "web-3" }
    }
  }

  # One map for both families: an ip key holds IPv4 v4-mapped in 16 bytes.
  # Each value is 1, a u32 in native byte order.
  expect "sink.ebpf_map.allowed" {
    at    = "0s"
    state = { "10.0.0.7" = "01000000", "10.0.0.9" = "01000000", "fd00::7" = "01000000" }
  }

  # A new key is allowed at once.
  given "source.nats_kv.pod_ips" {
    at  = "1s"
    add = { "10.0.0.8" = { namespace = "shop", node = "node-b", pod = "web-2" } }
  }
  expect "sink.ebpf_map.allowed" {
    at     = "1s"
    keys   = ["10.0.0.7", "10.0.0.8", "10.0.0.9", "fd00::7"]
    writes = ["+10.0.0.8"]
  }

  given "source.nats_kv.pod_ips" {
    at     = "5s"
    delete = ["10.0.0.7", "fd00::7"]
  }
  expect "sink.ebpf_map.allowed" {
    at     = "34999ms"
    keys   = ["10.0.0.7", "10.0.0.8", "10.0.0.9", "fd00::7"]
    writes = []
  }
  expect "sink.ebpf_map.allowed" {
    at     = "35s"
    keys   = ["10.0.0.8", "10.0.0.9"]
    writes = ["-10.0.0.7", "-fd00::7"]
  }
}

test "a key that comes back within the grace period is never removed" {
  given "source.nats_kv.pod_ips" {
    at  = "0s"
    add = { "10.0.0.7" = { namespace = "shop", node = "node-a", pod = "web-1" } }
  }
  expect "sink.ebpf_map.allowed" {
    at    = "0s"
    state = { "10.0.0.7" = "01000000" }
  }

  # The hub lost the pod for a moment (a restart of it, a pod recreated
  # with its IP): the map does not notice.
  given "source.nats_kv.pod_ips" {
    at     = "1s"
    delete = ["10.0.0.7"]
  }
  given "source.nats_kv.pod_ips" {
    at  = "20s"
    add = { "10.0.0.7" = { namespace = "shop", node = "node-a", pod = "web-1b" } }
  }
  expect "sink.ebpf_map.allowed" {
    at     = "60s"
    state  = { "10.0.0.7" = "01000000" }
    writes = []
  }
}
