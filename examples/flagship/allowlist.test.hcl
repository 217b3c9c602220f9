# Config tests of the flagship: `pipeline test examples/flagship`.
# Times are virtual: the 30s grace period passes in no real time.

test "a running pod's IP is allowed after the debounce" {
  given "source.kubernetes.backend_pods" {
    at = "0s"
    add = {
      "shop/web-1" = {
        metadata = { name = "web-1", namespace = "shop" }
        status   = { phase = "Running", podIPs = [{ ip = "10.0.0.7" }, { ip = "fd00::7" }] }
      }
      "shop/web-2" = {
        metadata = { name = "web-2", namespace = "shop" }
        status   = { phase = "Pending", podIPs = [] }
      }
    }
  }

  # The initial state passes at once; the map holds each IP with value 1
  # (a u32 in native byte order).
  expect "sink.ebpf_map.allowed" {
    at    = "0s"
    state = { "10.0.0.7" = "01000000", "fd00::7" = "01000000" }
  }

  given "source.kubernetes.backend_pods" {
    at = "1s"
    update = {
      "shop/web-2" = {
        metadata = { name = "web-2", namespace = "shop" }
        status   = { phase = "Running", podIPs = [{ ip = "10.0.0.8" }] }
      }
    }
  }

  # Within the 100ms debounce interval nothing is written yet.
  expect "sink.ebpf_map.allowed" {
    at   = "1050ms"
    keys = ["10.0.0.7", "fd00::7"]
  }

  expect "sink.ebpf_map.allowed" {
    at     = "1100ms"
    keys   = ["10.0.0.7", "10.0.0.8", "fd00::7"]
    writes = ["+10.0.0.8"]
  }
}

test "a deleted pod's IP stays for the grace period" {
  vars = { grace = "30s" }

  given "source.kubernetes.backend_pods" {
    at = "0s"
    add = {
      "shop/web-1" = {
        metadata = { name = "web-1", namespace = "shop" }
        status   = { phase = "Running", podIPs = [{ ip = "10.0.0.7" }] }
      }
    }
  }

  given "source.kubernetes.backend_pods" {
    at     = "5s"
    delete = ["shop/web-1"]
  }

  expect "sink.ebpf_map.allowed" {
    at    = "35s"
    state = { "10.0.0.7" = "01000000" }
  }

  # Deleted at 5s, passed by the debounce at 5.1s, due 30s later.
  expect "sink.ebpf_map.allowed" {
    at     = "35100ms"
    keys   = []
    writes = ["-10.0.0.7"]
  }

  expect "sink.nats.events" {
    at   = "35100ms"
    keys = []
  }
}
