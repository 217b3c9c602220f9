# Config tests of the unprivileged demo: `pipeline test examples/demo-unprivileged`.
# The timeline of `make demo` without root, in virtual time: the 100ms
# debounce and the 5s grace period pass in no real time, and no cluster,
# NATS server or file is touched.

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

  # The initial state passes at once: the log sink, in the map's place,
  # the audit trail and the bucket the agents read hold the records.
  expect "sink.log.allowed" {
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
  expect "sink.log.allowed" {
    at     = "1099ms"
    keys   = ["10.244.1.11", "10.244.1.12", "10.244.2.13"]
    writes = []
  }
  expect "sink.log.allowed" {
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
  # agents drain with their own grace period); the allow-list keeps the IP
  # for the 5s grace period.
  given "source.kubernetes.backend_pods" {
    at     = "2s"
    delete = ["shop/backend-2"]
  }
  expect "sink.nats_kv.pod_ips" {
    at     = "2100ms"
    keys   = ["v1.10.244.1.11", "v1.10.244.2.13", "v1.10.244.3.14"]
    writes = ["-v1.10.244.1.12"]
  }
  expect "sink.log.allowed" {
    at     = "7099ms"
    keys   = ["10.244.1.11", "10.244.1.12", "10.244.2.13", "10.244.3.14"]
    writes = []
  }
  expect "sink.log.allowed" {
    at     = "7100ms"
    keys   = ["10.244.1.11", "10.244.2.13", "10.244.3.14"]
    writes = ["-10.244.1.12"]
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
  expect "sink.log.allowed" {
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
  expect "sink.log.allowed" {
    at     = "20s"
    keys   = ["10.244.1.11"]
    writes = []
  }
  expect "sink.audit.trail" {
    at     = "20s"
    writes = ["+10.244.1.11"]
  }
}

test "only a running pod's IPs are allowed" {
  given "source.kubernetes.backend_pods" {
    at = "0s"
    add = {
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
  expect "sink.log.allowed" {
    at   = "0s"
    keys = ["10.244.1.11", "fd00::11"]
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
  expect "sink.log.allowed" {
    at     = "6099ms"
    keys   = ["10.244.1.11", "fd00::11"]
    writes = []
  }
  expect "sink.log.allowed" {
    at     = "6100ms"
    keys   = []
    writes = ["-10.244.1.11", "-fd00::11"]
  }
}

test "an IP a new pod takes during the grace period stays, with the new pod" {
  given "source.kubernetes.backend_pods" {
    at = "0s"
    add = {
      "shop/backend-1" = {
        metadata = { name = "backend-1", namespace = "shop" }
        status   = { phase = "Running", podIP = "10.244.1.11", podIPs = [{ ip = "10.244.1.11" }] }
      }
    }
  }
  given "source.kubernetes.backend_pods" {
    at     = "1s"
    delete = ["shop/backend-1"]
  }
  given "source.kubernetes.backend_pods" {
    at = "3s"
    add = {
      "shop/backend-9" = {
        metadata = { name = "backend-9", namespace = "shop" }
        status   = { phase = "Running", podIP = "10.244.1.11", podIPs = [{ ip = "10.244.1.11" }] }
      }
    }
  }

  # backend-9 takes the IP while backend-1's removal is pending: the entry
  # is rewritten for backend-9, and backend-1's grace period, due at
  # 6.1s, removes nothing.
  expect "sink.log.allowed" {
    at     = "3100ms"
    state  = { "10.244.1.11" = { namespace = "shop", pod = "backend-9" } }
    writes = ["+10.244.1.11", "+10.244.1.11"]
  }
  expect "sink.log.allowed" {
    at     = "10s"
    state  = { "10.244.1.11" = { namespace = "shop", pod = "backend-9" } }
    writes = []
  }
}
