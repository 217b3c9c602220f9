# Config tests of the hub: `pipeline test examples/hub`. What the hub
# writes to the bucket is what examples/agent reads (its tests give the
# same records). A test runs every sink as if this instance held the Lease.

test "each pod IP is a key of the bucket, escaped, its value the pod's JSON" {
  given "source.kubernetes.pods" {
    at = "0s"
    add = {
      "shop/web-1" = {
        metadata = { name = "web-1", namespace = "shop" }
        spec     = { nodeName = "node-a" }
        status   = { phase = "Running", podIPs = [{ ip = "10.0.0.7" }, { ip = "fd00::7" }] }
      }
      # Scheduled, no IP yet: nothing to mirror.
      "shop/web-2" = {
        metadata = { name = "web-2", namespace = "shop" }
        spec     = { nodeName = "node-b" }
        status   = { phase = "Pending" }
      }
      # Finished: it keeps its IPs in its status, but the network may give
      # them to another pod, so they are not mirrored.
      "shop/job-1" = {
        metadata = { name = "job-1", namespace = "shop" }
        spec     = { nodeName = "node-b" }
        status   = { phase = "Succeeded", podIPs = [{ ip = "10.0.0.9" }] }
      }
    }
  }

  # KV forbids ':' in a key: fd00::7 is stored as fd00=3A=3A7, which the
  # agent's source turns back. Values are JSON with sorted keys.
  expect "sink.nats_kv.pod_ips" {
    at = "0s"
    state = {
      "v1.10.0.0.7"    = "{\"namespace\":\"shop\",\"node\":\"node-a\",\"pod\":\"web-1\"}"
      "v1.fd00=3A=3A7" = "{\"namespace\":\"shop\",\"node\":\"node-a\",\"pod\":\"web-1\"}"
    }
  }

  # web-2 gets its IP: written at once, no debounce on the hub.
  given "source.kubernetes.pods" {
    at = "1s"
    update = {
      "shop/web-2" = {
        metadata = { name = "web-2", namespace = "shop" }
        spec     = { nodeName = "node-b" }
        status   = { phase = "Running", podIPs = [{ ip = "10.0.0.8" }] }
      }
    }
  }
  expect "sink.nats_kv.pod_ips" {
    at     = "1s"
    keys   = ["v1.10.0.0.7", "v1.10.0.0.8", "v1.fd00=3A=3A7"]
    writes = ["+v1.10.0.0.8"]
  }

  # A deleted pod's keys go at once: the agents drain with their own
  # grace period.
  given "source.kubernetes.pods" {
    at     = "2s"
    delete = ["shop/web-1"]
  }
  expect "sink.nats_kv.pod_ips" {
    at     = "2s"
    keys   = ["v1.10.0.0.8"]
    writes = ["-v1.10.0.0.7", "-v1.fd00=3A=3A7"]
  }

  # web-2 finishes: its IP goes as if it were deleted.
  given "source.kubernetes.pods" {
    at = "3s"
    update = {
      "shop/web-2" = {
        metadata = { name = "web-2", namespace = "shop" }
        spec     = { nodeName = "node-b" }
        status   = { phase = "Succeeded", podIPs = [{ ip = "10.0.0.8" }] }
      }
    }
  }
  expect "sink.nats_kv.pod_ips" {
    at     = "3s"
    keys   = []
    writes = ["-v1.10.0.0.8"]
  }
}
