# Config tests of the demo: `pipeline test examples/demo`. The timeline of
# `make demo` in virtual time: the 100ms debounce and the 5s grace period
# pass in no real time, and no cluster, map, NATS server or file is touched.

test "backend pods are allowed after the debounce; a deleted pod drains after the grace period" {
  given "source.kubernetes.backend_pods" {
    at = "0s"
    add = {
      "shop/backend-1" = {
        metadata = { name = "backend-1", namespace = "shop" }
        status   = { phase = "Running", podIP = "10.244.1.11", podIPs = [{ ip = "10.244.1.11" }] }
      }
      "shop/backend-2" = {
        metadata = { name = "backend-2", namespace = "shop" }
        status   = { phase = "Running", podIP = "10.244.1.12", podIPs = [{ ip = "10.244.1.12" }] }
      }
      "shop/backend-3" = {
        metadata = { name = "backend-3", namespace = "shop" }
        status   = { phase = "Running", podIP = "10.244.2.13", podIPs = [{ ip = "10.244.2.13" }] }
      }
    }
  }

  # The initial state passes at once. The map holds each IP with value 1
  # (a u32 in native byte order); the log, the audit trail and the bucket
  # the agents read hold the records.
  expect "sink.ebpf_map.allowed" {
    at    = "0s"
    state = { "10.244.1.11" = "01000000", "10.244.1.12" = "01000000", "10.244.2.13" = "01000000" }
  }
  expect "sink.log.changes" {
    at = "0s"
    state = {
      "10.244.1.11" = { namespace = "shop", pod = "backend-1" }
      "10.244.1.12" = { namespace = "shop", pod = "backend-2" }
      "10.244.2.13" = { namespace = "shop", pod = "backend-3" }
    }
  }
  expect "sink.audit.trail" {
    at     = "0s"
    writes = ["+10.244.1.11", "+10.244.1.12", "+10.244.2.13"]
  }
  expect "sink.nats_kv.pod_ips" {
    at = "0s"
    state = {
      "v1.10.244.1.11" = "{\"namespace\":\"shop\",\"pod\":\"backend-1\"}"
      "v1.10.244.1.12" = "{\"namespace\":\"shop\",\"pod\":\"backend-2\"}"
      "v1.10.244.2.13" = "{\"namespace\":\"shop\",\"pod\":\"backend-3\"}"
    }
  }

  # A new pod: within the 100ms debounce interval nothing is written.
  given "source.kubernetes.backend_pods" {
    at = "1s"
    add = {
      "shop/backend-4" = {
        metadata = { name = "backend-4", namespace = "shop" }
        status   = { phase = "Running", podIP = "10.244.3.14", podIPs = [{ ip = "10.244.3.14" }] }
      }
    }
  }
  expect "sink.ebpf_map.allowed" {
    at     = "1099ms"
    keys   = ["10.244.1.11", "10.244.1.12", "10.244.2.13"]
    writes = []
  }
  expect "sink.nats_kv.pod_ips" {
    at     = "1099ms"
    keys   = ["v1.10.244.1.11", "v1.10.244.1.12", "v1.10.244.2.13"]
    writes = []
  }
  expect "sink.ebpf_map.allowed" {
    at     = "1100ms"
    keys   = ["10.244.1.11", "10.244.1.12", "10.244.2.13", "10.244.3.14"]
    writes = ["+10.244.3.14"]
  }
  expect "sink.nats_kv.pod_ips" {
    at     = "1100ms"
    keys   = ["v1.10.244.1.11", "v1.10.244.1.12", "v1.10.244.2.13", "v1.10.244.3.14"]
    writes = ["+v1.10.244.3.14"]
  }

  # backend-2 is deleted at 2s. The bucket follows after the debounce (the
  # agents drain with their own grace period); the map keeps the IP for
  # the 5s grace period, and so do the log and the audit trail.
  given "source.kubernetes.backend_pods" {
    at     = "2s"
    delete = ["shop/backend-2"]
  }
  expect "sink.nats_kv.pod_ips" {
    at     = "2100ms"
    keys   = ["v1.10.244.1.11", "v1.10.244.2.13", "v1.10.244.3.14"]
    writes = ["-v1.10.244.1.12"]
  }
  expect "sink.ebpf_map.allowed" {
    at     = "7099ms"
    keys   = ["10.244.1.11", "10.244.1.12", "10.244.2.13", "10.244.3.14"]
    writes = []
  }
  expect "sink.ebpf_map.allowed" {
    at     = "7100ms"
    keys   = ["10.244.1.11", "10.244.2.13", "10.244.3.14"]
    writes = ["-10.244.1.12"]
  }
  expect "sink.log.changes" {
    at     = "7100ms"
    keys   = ["10.244.1.11", "10.244.2.13", "10.244.3.14"]
    writes = ["+10.244.3.14", "-10.244.1.12"]
  }
  expect "sink.audit.trail" {
    at     = "7100ms"
    writes = ["+10.244.3.14", "-10.244.1.12"]
  }
}

test "a pod that comes back within the grace period is never removed" {
  given "source.kubernetes.backend_pods" {
    at = "0s"
    add = {
      "shop/backend-1" = {
        metadata = { name = "backend-1", namespace = "shop" }
        status   = { phase = "Running", podIP = "10.244.1.11", podIPs = [{ ip = "10.244.1.11" }] }
      }
    }
  }
  expect "sink.ebpf_map.allowed" {
    at   = "0s"
    keys = ["10.244.1.11"]
  }

  # Relabelled out of the selector at 1s (a removal, as the demo shows),
  # relabelled back at 3s, within the 5s grace period.
  given "source.kubernetes.backend_pods" {
    at     = "1s"
    delete = ["shop/backend-1"]
  }
  given "source.kubernetes.backend_pods" {
    at = "3s"
    add = {
      "shop/backend-1" = {
        metadata = { name = "backend-1", namespace = "shop" }
        status   = { phase = "Running", podIP = "10.244.1.11", podIPs = [{ ip = "10.244.1.11" }] }
      }
    }
  }
  expect "sink.ebpf_map.allowed" {
    at     = "20s"
    state  = { "10.244.1.11" = "01000000" }
    writes = []
  }
}

test "only a running pod's IPs are allowed, and only IPv4 ones reach the map" {
  given "source.kubernetes.backend_pods" {
    at = "0s"
    add = {
      # A dual-stack pod: the map's ipv4 keys cannot hold fd00::11, which
      # is skipped (counted and logged); the log and the bucket have it.
      "shop/backend-1" = {
        metadata = { name = "backend-1", namespace = "shop" }
        status   = { phase = "Running", podIP = "10.244.1.11", podIPs = [{ ip = "10.244.1.11" }, { ip = "fd00::11" }] }
      }
      # A finished pod keeps its IPs in its status, but the network may
      # give them to another pod: not allowed.
      "shop/backend-job" = {
        metadata = { name = "backend-job", namespace = "shop" }
        status   = { phase = "Succeeded", podIP = "10.244.1.12", podIPs = [{ ip = "10.244.1.12" }] }
      }
      "shop/backend-new" = {
        metadata = { name = "backend-new", namespace = "shop" }
        status   = { phase = "Pending" }
      }
    }
  }
  expect "sink.ebpf_map.allowed" {
    at   = "0s"
    keys = ["10.244.1.11"]
  }
  expect "sink.log.changes" {
    at   = "0s"
    keys = ["10.244.1.11", "fd00::11"]
  }
  expect "sink.nats_kv.pod_ips" {
    at   = "0s"
    keys = ["v1.10.244.1.11", "v1.fd00=3A=3A11"]
  }

  # backend-1 fails: its IPs leave after the grace period.
  given "source.kubernetes.backend_pods" {
    at = "1s"
    update = {
      "shop/backend-1" = {
        metadata = { name = "backend-1", namespace = "shop" }
        status   = { phase = "Failed", podIP = "10.244.1.11", podIPs = [{ ip = "10.244.1.11" }, { ip = "fd00::11" }] }
      }
    }
  }
  expect "sink.nats_kv.pod_ips" {
    at   = "1100ms"
    keys = []
  }
  expect "sink.ebpf_map.allowed" {
    at     = "6100ms"
    keys   = []
    writes = ["-10.244.1.11"]
  }
}

test "a burst of changes is held at most 1s (the debounce's max_wait) and written in one batch" {
  given "source.kubernetes.backend_pods" {
    at = "0s"
    add = {
      "shop/backend-1" = {
        metadata = { name = "backend-1", namespace = "shop" }
        status   = { phase = "Running", podIP = "10.244.1.11", podIPs = [{ ip = "10.244.1.11" }] }
      }
    }
  }
  expect "sink.ebpf_map.allowed" {
    at   = "0s"
    keys = ["10.244.1.11"]
  }

  # A scale-up: a pod every 80ms from 1s to 2.12s, never 100ms quiet.
  given "source.kubernetes.backend_pods" {
    at  = "1000ms"
    add = { "shop/backend-10" = { metadata = { name = "backend-10", namespace = "shop" }, status = { phase = "Running", podIPs = [{ ip = "10.244.4.10" }] } } }
  }
  given "source.kubernetes.backend_pods" {
    at  = "1080ms"
    add = { "shop/backend-11" = { metadata = { name = "backend-11", namespace = "shop" }, status = { phase = "Running", podIPs = [{ ip = "10.244.4.11" }] } } }
  }
  given "source.kubernetes.backend_pods" {
    at  = "1160ms"
    add = { "shop/backend-12" = { metadata = { name = "backend-12", namespace = "shop" }, status = { phase = "Running", podIPs = [{ ip = "10.244.4.12" }] } } }
  }
  given "source.kubernetes.backend_pods" {
    at  = "1240ms"
    add = { "shop/backend-13" = { metadata = { name = "backend-13", namespace = "shop" }, status = { phase = "Running", podIPs = [{ ip = "10.244.4.13" }] } } }
  }
  given "source.kubernetes.backend_pods" {
    at  = "1320ms"
    add = { "shop/backend-14" = { metadata = { name = "backend-14", namespace = "shop" }, status = { phase = "Running", podIPs = [{ ip = "10.244.4.14" }] } } }
  }
  given "source.kubernetes.backend_pods" {
    at  = "1400ms"
    add = { "shop/backend-15" = { metadata = { name = "backend-15", namespace = "shop" }, status = { phase = "Running", podIPs = [{ ip = "10.244.4.15" }] } } }
  }
  given "source.kubernetes.backend_pods" {
    at  = "1480ms"
    add = { "shop/backend-16" = { metadata = { name = "backend-16", namespace = "shop" }, status = { phase = "Running", podIPs = [{ ip = "10.244.4.16" }] } } }
  }
  given "source.kubernetes.backend_pods" {
    at  = "1560ms"
    add = { "shop/backend-17" = { metadata = { name = "backend-17", namespace = "shop" }, status = { phase = "Running", podIPs = [{ ip = "10.244.4.17" }] } } }
  }
  given "source.kubernetes.backend_pods" {
    at  = "1640ms"
    add = { "shop/backend-18" = { metadata = { name = "backend-18", namespace = "shop" }, status = { phase = "Running", podIPs = [{ ip = "10.244.4.18" }] } } }
  }
  given "source.kubernetes.backend_pods" {
    at  = "1720ms"
    add = { "shop/backend-19" = { metadata = { name = "backend-19", namespace = "shop" }, status = { phase = "Running", podIPs = [{ ip = "10.244.4.19" }] } } }
  }
  given "source.kubernetes.backend_pods" {
    at  = "1800ms"
    add = { "shop/backend-20" = { metadata = { name = "backend-20", namespace = "shop" }, status = { phase = "Running", podIPs = [{ ip = "10.244.4.20" }] } } }
  }
  given "source.kubernetes.backend_pods" {
    at  = "1880ms"
    add = { "shop/backend-21" = { metadata = { name = "backend-21", namespace = "shop" }, status = { phase = "Running", podIPs = [{ ip = "10.244.4.21" }] } } }
  }
  given "source.kubernetes.backend_pods" {
    at  = "1960ms"
    add = { "shop/backend-22" = { metadata = { name = "backend-22", namespace = "shop" }, status = { phase = "Running", podIPs = [{ ip = "10.244.4.22" }] } } }
  }
  given "source.kubernetes.backend_pods" {
    at  = "2040ms"
    add = { "shop/backend-23" = { metadata = { name = "backend-23", namespace = "shop" }, status = { phase = "Running", podIPs = [{ ip = "10.244.4.23" }] } } }
  }
  given "source.kubernetes.backend_pods" {
    at  = "2120ms"
    add = { "shop/backend-24" = { metadata = { name = "backend-24", namespace = "shop" }, status = { phase = "Running", podIPs = [{ ip = "10.244.4.24" }] } } }
  }

  # Held until max_wait, 10 x the interval after the first change...
  expect "sink.ebpf_map.allowed" {
    at     = "1999ms"
    keys   = ["10.244.1.11"]
    writes = []
  }
  expect "sink.ebpf_map.allowed" {
    at = "2s"
    keys = [
      "10.244.1.11", "10.244.4.10", "10.244.4.11", "10.244.4.12", "10.244.4.13",
      "10.244.4.14", "10.244.4.15", "10.244.4.16", "10.244.4.17", "10.244.4.18",
      "10.244.4.19", "10.244.4.20", "10.244.4.21", "10.244.4.22",
    ]
    writes = [
      "+10.244.4.10", "+10.244.4.11", "+10.244.4.12", "+10.244.4.13", "+10.244.4.14",
      "+10.244.4.15", "+10.244.4.16", "+10.244.4.17", "+10.244.4.18", "+10.244.4.19",
      "+10.244.4.20", "+10.244.4.21", "+10.244.4.22",
    ]
  }

  # ...and the rest 100ms after the last change.
  expect "sink.ebpf_map.allowed" {
    at     = "2219ms"
    writes = []
  }
  expect "sink.ebpf_map.allowed" {
    at     = "2220ms"
    writes = ["+10.244.4.23", "+10.244.4.24"]
  }
}
