# Config tests of the single ConfigMap: `pipeline test examples/single-configmap`.
# The source watches one object, so its key is always ingress/haproxy-config.

test "each data entry is a record, and follows the ConfigMap at once" {
  given "source.kubernetes.haproxy_config" {
    at = "0s"
    add = {
      "ingress/haproxy-config" = {
        metadata = { name = "haproxy-config", namespace = "ingress" }
        data     = { maxconn = "2000", "timeout-client" = "5s", "ssl-redirect" = "true" }
      }
    }
  }
  expect "sink.log.settings" {
    at    = "0s"
    state = { maxconn = "2000", "ssl-redirect" = "true", "timeout-client" = "5s" }
  }

  # One edit of the ConfigMap: a changed entry is rewritten, a new one
  # added, a removed one deleted, an unchanged one not written again.
  given "source.kubernetes.haproxy_config" {
    at = "1s"
    update = {
      "ingress/haproxy-config" = {
        metadata = { name = "haproxy-config", namespace = "ingress" }
        data     = { maxconn = "4000", "timeout-client" = "5s", "timeout-server" = "30s" }
      }
    }
  }
  expect "sink.log.settings" {
    at     = "1s"
    state  = { maxconn = "4000", "timeout-client" = "5s", "timeout-server" = "30s" }
    writes = ["+maxconn", "+timeout-server", "-ssl-redirect"]
  }

  # A ConfigMap without data holds no settings.
  given "source.kubernetes.haproxy_config" {
    at = "2s"
    update = {
      "ingress/haproxy-config" = {
        metadata = { name = "haproxy-config", namespace = "ingress" }
      }
    }
  }
  expect "sink.log.settings" {
    at   = "2s"
    keys = []
  }
}

test "deleting the ConfigMap deletes every setting" {
  given "source.kubernetes.haproxy_config" {
    at = "0s"
    add = {
      "ingress/haproxy-config" = {
        metadata = { name = "haproxy-config", namespace = "ingress" }
        data     = { maxconn = "2000", "timeout-client" = "5s" }
      }
    }
  }
  given "source.kubernetes.haproxy_config" {
    at     = "1s"
    delete = ["ingress/haproxy-config"]
  }
  expect "sink.log.settings" {
    at     = "1s"
    keys   = []
    writes = ["+maxconn", "+timeout-client", "-maxconn", "-timeout-client"]
  }
}
