# Config tests of the namespace policies: `pipeline test examples/namespace-policies`.
# Times are virtual: the 30s grace period passes in no real time.

test "a labelled namespace gets a policy that follows its labels and goes after the grace period" {
  given "source.kubernetes.namespaces" {
    at  = "0s"
    add = { shop = { metadata = { name = "shop", labels = { netpol = "default-deny", netpol-tier = "web" } } } }
  }

  expect "sink.kubernetes.default_deny" {
    at = "0s"
    state = {
      "shop/default-deny" = {
        apiVersion = "networking.k8s.io/v1"
        kind       = "NetworkPolicy"
        metadata = {
          name      = "default-deny"
          namespace = "shop"
          labels    = { "pipeline.io/owner" = "namespace-policies.default-deny" }
        }
        spec = {
          podSelector = {}
          policyTypes = ["Ingress"]
          ingress     = [{ from = [{ podSelector = { matchLabels = { tier = "web" } } }] }]
        }
      }
    }
  }

  given "source.kubernetes.namespaces" {
    at     = "1s"
    update = { shop = { metadata = { name = "shop", labels = { netpol = "default-deny" } } } }
  }

  expect "sink.kubernetes.default_deny" {
    at     = "1s"
    keys   = ["shop/default-deny"]
    writes = ["+shop/default-deny"]
  }

  given "source.kubernetes.namespaces" {
    at     = "2s"
    delete = ["shop"]
  }

  expect "sink.kubernetes.default_deny" {
    at   = "31999ms"
    keys = ["shop/default-deny"]
  }
  expect "sink.kubernetes.default_deny" {
    at     = "32s"
    keys   = []
    writes = ["-shop/default-deny"]
  }
}
