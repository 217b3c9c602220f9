# Config tests of the HAProxy example: `pipeline test examples/haproxy`.
# Times are virtual: the quiet time and the drain pass in no real time.

test "ready endpoints become servers of the Ingress's backend; a removed one drains" {
  vars = { listen = "127.0.0.1:8080", quiet = "500ms", drain = "5s" }

  given "source.kubernetes.ingresses" {
    at = "0s"
    add = {
      "shop/web" = {
        metadata = { name = "web", namespace = "shop" }
        spec = { rules = [{ host = "shop.example", http = { paths = [
          { path = "/", backend = { service = { name = "web" } } }
        ] } }] }
      }
    }
  }
  given "source.kubernetes.slices" {
    at = "0s"
    add = {
      "shop/web-abc" = {
        metadata = { name = "web-abc", namespace = "shop", labels = { "kubernetes.io/service-name" = "web" } }
        ports    = [{ port = 8080 }]
        endpoints = [
          { addresses = ["10.0.0.1"], conditions = { ready = true }, targetRef = { name = "web-1" } },
          { addresses = ["10.0.0.2"], conditions = { ready = true }, targetRef = { name = "web-2" } },
          { addresses = ["10.0.0.3"], conditions = { ready = false }, targetRef = { name = "web-3" } },
        ]
      }
    }
  }

  # The initial state passes the debounce at once; a not-ready endpoint is
  # no server.
  expect "sink.template.haproxy" {
    at      = "0s"
    content = <<-EOT
      # Rendered by pipeline from the Ingresses and EndpointSlices of namespace
      # shop. Do not edit: a change here is undone at the next resync.
      global
        log stderr format raw local0 warning
        stats socket /run/haproxy/admin.sock level admin
        # A reload leaves the old workers serving their open connections: end
        # them after 30s, and keep at most 3 generations of workers.
        hard-stop-after 30s
        mworker-max-reloads 3

      defaults
        mode http
        timeout connect 1s
        timeout client 5s
        timeout server 5s

      frontend http
        bind 127.0.0.1:8080
        use_backend shop_web if { hdr(host) -i shop.example } { path_beg / }

      backend shop_web
        balance roundrobin
        server web-1:8080 10.0.0.1:8080
        server web-2:8080 10.0.0.2:8080
    EOT
  }

  # web-2 goes away: it keeps its traffic for the drain time.
  given "source.kubernetes.slices" {
    at = "1s"
    update = {
      "shop/web-abc" = {
        metadata = { name = "web-abc", namespace = "shop", labels = { "kubernetes.io/service-name" = "web" } }
        ports    = [{ port = 8080 }]
        endpoints = [
          { addresses = ["10.0.0.1"], conditions = { ready = true }, targetRef = { name = "web-1" } },
        ]
      }
    }
  }
  expect "sink.template.haproxy" {
    at       = "6s"
    contains = ["server web-1:8080 10.0.0.1:8080\n  server web-2:8080 10.0.0.2:8080\n"]
  }
  # Drained at 6s, rendered after the quiet time.
  expect "sink.template.haproxy" {
    at       = "6500ms"
    contains = ["  balance roundrobin\n  server web-1:8080 10.0.0.1:8080\n"]
    keys     = ["endpoint/web/10.0.0.1:8080", "route/web/0"]
  }
}

test "a backend snippet from an annotation is rendered into its backend" {
  given "source.kubernetes.ingresses" {
    at = "0s"
    add = {
      "shop/api" = {
        metadata = { name = "api", namespace = "shop", annotations = { "haproxy.pipeline.dev/backend-snippet" = "option httpchk GET /healthz" } }
        spec     = { rules = [{ http = { paths = [{ path = "/api", backend = { service = { name = "api" } } }] } }] }
      }
    }
  }
  given "source.kubernetes.slices" {
    at = "0s"
    add = {
      "shop/api-x" = {
        metadata  = { name = "api-x", namespace = "shop", labels = { "kubernetes.io/service-name" = "api" } }
        ports     = [{ port = 9000 }]
        endpoints = [{ addresses = ["10.0.1.1"] }]
      }
    }
  }
  # No host: the path alone routes. Ready unset counts as ready.
  expect "sink.template.haproxy" {
    at       = "0s"
    contains = ["  use_backend shop_api if { path_beg /api }\n", "backend shop_api\n  balance roundrobin\n  option httpchk GET /healthz\n  server 10.0.1.1:9000 10.0.1.1:9000\n"]
  }
}

test "a port change during a drain gives two servers with distinct names" {
  vars = { quiet = "500ms", drain = "5s" }

  given "source.kubernetes.ingresses" {
    at = "0s"
    add = {
      "shop/web" = {
        metadata = { name = "web", namespace = "shop" }
        spec     = { rules = [{ http = { paths = [{ path = "/", backend = { service = { name = "web" } } }] } }] }
      }
    }
  }
  given "source.kubernetes.slices" {
    at = "0s"
    add = {
      "shop/web-abc" = {
        metadata  = { name = "web-abc", namespace = "shop", labels = { "kubernetes.io/service-name" = "web" } }
        ports     = [{ port = 8080 }]
        endpoints = [{ addresses = ["10.0.0.1"], targetRef = { name = "web-1" } }]
      }
    }
  }
  # The same pod now serves on another port: the old server drains beside
  # the new one, and HAProxy accepts the file (no two servers share a name).
  given "source.kubernetes.slices" {
    at = "1s"
    update = {
      "shop/web-abc" = {
        metadata  = { name = "web-abc", namespace = "shop", labels = { "kubernetes.io/service-name" = "web" } }
        ports     = [{ port = 9090 }]
        endpoints = [{ addresses = ["10.0.0.1"], targetRef = { name = "web-1" } }]
      }
    }
  }
  expect "sink.template.haproxy" {
    at       = "2s"
    contains = ["  server web-1:8080 10.0.0.1:8080\n  server web-1:9090 10.0.0.1:9090\n"]
  }
  expect "sink.template.haproxy" {
    at       = "6500ms"
    contains = ["  balance roundrobin\n  server web-1:9090 10.0.0.1:9090\n"]
  }
}
