# Config tests of the fan-in: `pipeline test examples/fan-in`. A source in
# a test holds only what its givens say, so the static networks are given
# here too. Times are virtual: the 30s grace period passes in no real time.

test "pods and static networks share one map; neither prunes the other" {
  given "source.static.networks" {
    at  = "0s"
    add = { "10.0.0.0/8" = { from = "static", name = "internal" } }
  }
  given "source.kubernetes.pods" {
    at = "0s"
    add = {
      "shop/backend-1" = {
        metadata = { name = "backend-1", namespace = "shop" }
        status   = { phase = "Running", podIP = "10.244.1.7" }
      }
      # Finished: it keeps its IP in its status, but the network may give
      # it to another pod, so it is not allowed.
      "shop/backend-job" = {
        metadata = { name = "backend-job", namespace = "shop" }
        status   = { phase = "Succeeded", podIP = "10.244.1.8" }
      }
    }
  }

  # Both inputs' keys, each with the map's u8 value 1.
  expect "sink.ebpf_map.allowed" {
    at    = "0s"
    state = { "10.0.0.0/8" = "01", "10.244.1.7/32" = "01" }
  }

  given "source.kubernetes.pods" {
    at     = "1s"
    delete = ["shop/backend-1"]
  }

  # The pod's IP drains after its grace period; the static network stays.
  expect "sink.ebpf_map.allowed" {
    at   = "30999ms"
    keys = ["10.0.0.0/8", "10.244.1.7/32"]
  }
  expect "sink.ebpf_map.allowed" {
    at     = "31s"
    keys   = ["10.0.0.0/8"]
    writes = ["-10.244.1.7/32"]
  }
}
