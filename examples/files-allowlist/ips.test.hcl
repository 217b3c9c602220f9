# Config tests of the files allow-list: `pipeline test examples/files-allowlist`.
# A source in a test holds only what its givens say: the givens stand for
# the pods of manifests/*.yaml that match app=backend (frontend-1 does
# not), keyed namespace/name. `pipeline plan examples/files-allowlist`
# reads the manifests themselves.

test "each backend pod with an IP is a record keyed by its IP" {
  given "source.files.pods" {
    at = "0s"
    add = {
      "shop/backend-1" = {
        apiVersion = "v1"
        kind       = "Pod"
        metadata   = { name = "backend-1", namespace = "shop", labels = { app = "backend" } }
        status     = { phase = "Running", podIP = "10.244.1.11", podIPs = [{ ip = "10.244.1.11" }] }
      }
      "shop/backend-2" = {
        apiVersion = "v1"
        kind       = "Pod"
        metadata   = { name = "backend-2", namespace = "shop", labels = { app = "backend" } }
        status     = { phase = "Running", podIP = "10.244.1.12", podIPs = [{ ip = "10.244.1.12" }] }
      }
      # Not scheduled yet: no IP, no record.
      "shop/backend-3" = {
        apiVersion = "v1"
        kind       = "Pod"
        metadata   = { name = "backend-3", namespace = "shop", labels = { app = "backend" } }
        status     = { phase = "Pending" }
      }
    }
  }
  expect "sink.log.ips" {
    at = "0s"
    state = {
      "10.244.1.11" = { pod = "backend-1" }
      "10.244.1.12" = { pod = "backend-2" }
    }
  }

  # An edit of the manifests: backend-3 gets its IP, backend-2 is removed.
  given "source.files.pods" {
    at = "1s"
    update = {
      "shop/backend-3" = {
        apiVersion = "v1"
        kind       = "Pod"
        metadata   = { name = "backend-3", namespace = "shop", labels = { app = "backend" } }
        status     = { phase = "Running", podIP = "10.244.2.13", podIPs = [{ ip = "10.244.2.13" }] }
      }
    }
    delete = ["shop/backend-2"]
  }
  expect "sink.log.ips" {
    at = "1s"
    state = {
      "10.244.1.11" = { pod = "backend-1" }
      "10.244.2.13" = { pod = "backend-3" }
    }
    writes = ["+10.244.2.13", "-10.244.1.12"]
  }

  # An IP that moves to another pod is one record with a new value.
  given "source.files.pods" {
    at     = "2s"
    delete = ["shop/backend-1"]
    add = {
      "shop/backend-4" = {
        apiVersion = "v1"
        kind       = "Pod"
        metadata   = { name = "backend-4", namespace = "shop", labels = { app = "backend" } }
        status     = { phase = "Running", podIP = "10.244.1.11", podIPs = [{ ip = "10.244.1.11" }] }
      }
    }
  }
  expect "sink.log.ips" {
    at = "2s"
    state = {
      "10.244.1.11" = { pod = "backend-4" }
      "10.244.2.13" = { pod = "backend-3" }
    }
    writes = ["+10.244.1.11"]
  }
}
