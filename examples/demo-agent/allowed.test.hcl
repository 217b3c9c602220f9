# Config tests of the demo's agent: `pipeline test examples/demo-agent`.
# The givens are what examples/demo mirrors into the bucket, as the
# nats_kv source emits it: the key_prefix stripped, escaped characters
# restored, the JSON decoded.

test "the agent logs the allow-list the hub mirrors, and follows its changes at once" {
  given "source.nats_kv.pod_ips" {
    at = "0s"
    add = {
      "10.244.1.11" = { namespace = "shop", pod = "backend-1" }
      "10.244.1.12" = { namespace = "shop", pod = "backend-2" }
      "10.244.2.13" = { namespace = "shop", pod = "backend-3" }
    }
  }
  expect "sink.log.allowed" {
    at = "0s"
    state = {
      "10.244.1.11" = { namespace = "shop", pod = "backend-1" }
      "10.244.1.12" = { namespace = "shop", pod = "backend-2" }
      "10.244.2.13" = { namespace = "shop", pod = "backend-3" }
    }
  }

  # The agent has no grace period of its own: a key the hub removes is
  # logged as removed at once (a real agent drains, see examples/agent).
  given "source.nats_kv.pod_ips" {
    at     = "1s"
    delete = ["10.244.1.12", "10.244.2.13"]
  }
  expect "sink.log.allowed" {
    at     = "1s"
    keys   = ["10.244.1.11"]
    writes = ["-10.244.1.12", "-10.244.2.13"]
  }

  given "source.nats_kv.pod_ips" {
    at     = "2s"
    update = { "10.244.1.11" = { namespace = "shop", pod = "backend-1b" } }
  }
  expect "sink.log.allowed" {
    at     = "2s"
    state  = { "10.244.1.11" = { namespace = "shop", pod = "backend-1b" } }
    writes = ["+10.244.1.11"]
  }
}
