# Config tests of the resource metrics: `pipeline test examples/resource-metrics`.

test "a Certificate's Ready condition is its series, and goes with it" {
  given "source.kubernetes.certificates" {
    at = "0s"
    add = {
      "shop/web" = {
        metadata = { namespace = "shop", name = "web" }
        status   = { conditions = [{ type = "Ready", status = "True" }, { type = "Issuing", status = "False" }] }
      }
      "shop/api" = {
        metadata = { namespace = "shop", name = "api" }
        status   = { conditions = [{ type = "Ready", status = "Unknown" }] }
      }
      "shop/new" = {
        metadata = { namespace = "shop", name = "new" }
      }
    }
  }

  expect "sink.prometheus.certificate_ready" {
    at      = "0s"
    content = <<-EOT
      # HELP kube_customresource_certificate_ready Whether the Certificate's Ready condition is True (1) or not (0: False, Unknown or absent).
      # TYPE kube_customresource_certificate_ready gauge
      kube_customresource_certificate_ready{condition="Ready",customresource_group="cert-manager.io",customresource_kind="Certificate",customresource_version="v1",name="api",namespace="shop",node="sink.prometheus.certificate_ready"} 0
      kube_customresource_certificate_ready{condition="Ready",customresource_group="cert-manager.io",customresource_kind="Certificate",customresource_version="v1",name="new",namespace="shop",node="sink.prometheus.certificate_ready"} 0
      kube_customresource_certificate_ready{condition="Ready",customresource_group="cert-manager.io",customresource_kind="Certificate",customresource_version="v1",name="web",namespace="shop",node="sink.prometheus.certificate_ready"} 1
    EOT
  }

  given "source.kubernetes.certificates" {
    at     = "10s"
    delete = ["shop/web"]
    update = {
      "shop/api" = {
        metadata = { namespace = "shop", name = "api" }
        status   = { conditions = [{ type = "Ready", status = "True" }] }
      }
    }
  }

  expect "sink.prometheus.certificate_ready" {
    at = "10s"
    state = {
      "shop/api" = "kube_customresource_certificate_ready{condition=\"Ready\",customresource_group=\"cert-manager.io\",customresource_kind=\"Certificate\",customresource_version=\"v1\",name=\"api\",namespace=\"shop\"} 1"
      "shop/new" = "kube_customresource_certificate_ready{condition=\"Ready\",customresource_group=\"cert-manager.io\",customresource_kind=\"Certificate\",customresource_version=\"v1\",name=\"new\",namespace=\"shop\"} 0"
    }
    writes = ["+shop/api", "-shop/web"]
  }
}

test "every condition of a Certificate is a series of its own" {
  given "source.kubernetes.certificates" {
    at = "0s"
    add = {
      "shop/web" = {
        metadata = { namespace = "shop", name = "web" }
        status   = { conditions = [{ type = "Ready", status = "True" }, { type = "Issuing", status = "False" }] }
      }
    }
  }

  expect "sink.prometheus.certificate_condition" {
    at = "0s"
    contains = [
      "kube_customresource_certificate_condition{condition=\"Issuing\",name=\"web\",namespace=\"shop\",node=\"sink.prometheus.certificate_condition\"} 0",
      "kube_customresource_certificate_condition{condition=\"Ready\",name=\"web\",namespace=\"shop\",node=\"sink.prometheus.certificate_condition\"} 1",
    ]
  }

  given "source.kubernetes.certificates" {
    at = "5s"
    update = {
      "shop/web" = {
        metadata = { namespace = "shop", name = "web" }
        status   = { conditions = [{ type = "Ready", status = "True" }] }
      }
    }
  }

  expect "sink.prometheus.certificate_condition" {
    at   = "5s"
    keys = ["shop/web/Ready"]
  }
}
