# Config tests of the Gateway API example: `pipeline test examples/gateway-api`.
# Times are virtual: the quiet time and the drain pass in no real time.

test "routes of this controller's Gateway are served and get their status; others are left alone" {
  vars = { listen = "127.0.0.1:8080", controller_name = "pipeline.dev/gateway-controller" }

  given "source.kubernetes.classes" {
    at = "0s"
    add = {
      "pipeline" = {
        metadata = { name = "pipeline", generation = 1, creationTimestamp = "2026-12-07T10:00:00Z" }
        spec     = { controllerName = "pipeline.dev/gateway-controller" }
      }
      "other" = {
        metadata = { name = "other", generation = 1, creationTimestamp = "2026-12-07T10:00:00Z" }
        spec     = { controllerName = "example.com/other" }
      }
    }
  }
  given "source.kubernetes.gateways" {
    at = "0s"
    add = {
      "shop/gw" = {
        metadata = { name = "gw", namespace = "shop", generation = 2, creationTimestamp = "2026-12-07T10:00:00Z" }
        spec     = { gatewayClassName = "pipeline", listeners = [{ name = "http", port = 80, protocol = "HTTP" }] }
      }
      "shop/other-gw" = {
        metadata = { name = "other-gw", namespace = "shop", generation = 1, creationTimestamp = "2026-12-07T10:00:00Z" }
        spec     = { gatewayClassName = "other", listeners = [{ name = "http", port = 80, protocol = "HTTP" }] }
      }
    }
  }
  given "source.kubernetes.routes" {
    at = "0s"
    add = {
      "shop/web" = {
        metadata = { name = "web", namespace = "shop", generation = 3, creationTimestamp = "2026-12-07T10:00:00Z" }
        spec = {
          hostnames  = ["shop.example"]
          parentRefs = [{ name = "gw" }]
          rules = [
            {
              matches     = [{ path = { type = "PathPrefix", value = "/api/" }, headers = [{ name = "X-Env", value = "canary" }] }]
              backendRefs = [{ name = "api", port = 80, weight = 3 }, { name = "api-v2", port = 80, weight = 1 }]
            },
            { backendRefs = [{ name = "web", port = 80 }] },
            { matches = [{ path = { type = "Exact", value = "/healthz" } }], backendRefs = [{ name = "web", port = 80 }] },
          ]
        }
      }
      "shop/broken" = {
        metadata = { name = "broken", namespace = "shop", generation = 1, creationTimestamp = "2026-12-07T10:00:00Z" }
        spec = {
          parentRefs = [{ name = "gw" }]
          rules      = [{ matches = [{ path = { type = "PathPrefix", value = "/broken" } }], backendRefs = [{ name = "missing", port = 80 }, { name = "db", namespace = "data", port = 5432 }] }]
        }
      }
      "shop/theirs" = {
        metadata = { name = "theirs", namespace = "shop", generation = 1, creationTimestamp = "2026-12-07T10:00:00Z" }
        spec     = { parentRefs = [{ name = "other-gw" }], rules = [{ backendRefs = [{ name = "web", port = 80 }] }] }
        status = { parents = [{ parentRef = { name = "other-gw" }, controllerName = "example.com/other", conditions = [
          { type = "Accepted", status = "True", reason = "Accepted", message = "", lastTransitionTime = "2026-12-07T09:00:00Z" }
        ] }] }
      }
      "shop/both" = {
        metadata = { name = "both", namespace = "shop", generation = 1, creationTimestamp = "2026-12-07T10:00:00Z" }
        spec = {
          hostnames  = ["*.both.example"]
          parentRefs = [{ name = "other-gw" }, { name = "gw", sectionName = "http" }]
          rules      = [{ backendRefs = [{ name = "web", port = 80 }] }]
        }
        status = { parents = [{ parentRef = { name = "other-gw" }, controllerName = "example.com/other", conditions = [
          { type = "Accepted", status = "True", reason = "Accepted", message = "", lastTransitionTime = "2026-12-07T09:00:00Z" }
        ] }] }
      }
    }
  }
  given "source.kubernetes.services" {
    at = "0s"
    add = {
      "shop/web"    = { metadata = { name = "web", namespace = "shop" }, spec = { ports = [{ name = "http", port = 80 }] } }
      "shop/api"    = { metadata = { name = "api", namespace = "shop" }, spec = { ports = [{ name = "http", port = 80 }] } }
      "shop/api-v2" = { metadata = { name = "api-v2", namespace = "shop" }, spec = { ports = [{ name = "http", port = 80 }] } }
    }
  }
  given "source.kubernetes.slices" {
    at = "0s"
    add = {
      "shop/web-a" = {
        metadata  = { name = "web-a", namespace = "shop", labels = { "kubernetes.io/service-name" = "web" } }
        ports     = [{ name = "http", port = 8080 }]
        endpoints = [{ addresses = ["10.0.0.1"], targetRef = { name = "web-1" } }]
      }
      "shop/api-a" = {
        metadata = { name = "api-a", namespace = "shop", labels = { "kubernetes.io/service-name" = "api" } }
        ports    = [{ name = "http", port = 9000 }]
        endpoints = [
          { addresses = ["10.0.1.1"], targetRef = { name = "api-1" } },
          { addresses = ["10.0.1.2"], targetRef = { name = "api-2" } },
          { addresses = ["10.0.1.3"], conditions = { ready = false }, targetRef = { name = "api-3" } },
        ]
      }
      "shop/api-v2-a" = {
        metadata  = { name = "api-v2-a", namespace = "shop", labels = { "kubernetes.io/service-name" = "api-v2" } }
        ports     = [{ name = "http", port = 9000 }]
        endpoints = [{ addresses = ["10.0.2.1"], targetRef = { name = "api-v2-1" } }]
      }
    }
  }
  given "source.kubernetes.grants" {
    at  = "0s"
    add = {}
  }

  # The matches are in the spec's precedence: hostnames before none
  # (wildcards after exact names), Exact before PathPrefix, longer prefixes
  # first. api gets 3/4 of rule 0's requests and api-v2 1/4: 2 x 256
  # against 171. The broken route's rule answers 500.
  expect "sink.template.haproxy" {
    at      = "0s"
    content = <<-EOT
      # Rendered by pipeline from the Gateways of the GatewayClasses of
      # pipeline.dev/gateway-controller. Do not edit: a change here is undone at the next resync.
      global
        log stderr format raw local0 warning
        stats socket /run/haproxy/admin.sock level admin
        hard-stop-after 30s
        mworker-max-reloads 3

      defaults
        mode http
        timeout connect 1s
        timeout client 5s
        timeout server 5s

      frontend http
        bind 127.0.0.1:8080
        use_backend shop_web_2 if { req.hdr(host),field(1,:) -i shop.example } { path /healthz }
        acl p_shop_web_0_0_0 path /api
        acl p_shop_web_0_0_0 path_beg /api/
        use_backend shop_web_0 if { req.hdr(host),field(1,:) -i shop.example } p_shop_web_0_0_0 { req.hdr(x-env) -m str canary }
        use_backend shop_web_1 if { req.hdr(host),field(1,:) -i shop.example } { path_beg / }
        use_backend shop_both_0 if { req.hdr(host),field(1,:) -m end -i .both.example } { path_beg / }
        acl p_shop_broken_0_0_0 path /broken
        acl p_shop_broken_0_0_0 path_beg /broken/
        use_backend shop_broken_0 if p_shop_broken_0_0_0
        default_backend not_found

      backend not_found
        http-request return status 404

      backend shop_both_0
        balance roundrobin
        server web_web-1:8080 10.0.0.1:8080 weight 256

      backend shop_broken_0
        balance roundrobin
        http-request return status 500

      backend shop_web_0
        balance roundrobin
        server api-v2_api-v2-1:9000 10.0.2.1:9000 weight 171
        server api_api-1:9000 10.0.1.1:9000 weight 256
        server api_api-2:9000 10.0.1.2:9000 weight 256

      backend shop_web_1
        balance roundrobin
        server web_web-1:8080 10.0.0.1:8080 weight 256

      backend shop_web_2
        balance roundrobin
        server web_web-1:8080 10.0.0.1:8080 weight 256
    EOT
  }
  # theirs names only a Gateway of another class: no status. both keeps
  # the other controller's entry and adds this one's; broken names a
  # missing Service and one in another namespace without a ReferenceGrant.
  expect "sink.kubernetes.route_status" {
    at = "0s"
    state = {
      "shop/both" = {
        apiVersion = "gateway.networking.k8s.io/v1"
        kind       = "HTTPRoute"
        metadata   = { name = "both", namespace = "shop" }
        status = {
          parents = [
            {
              conditions     = [{ lastTransitionTime = "2026-12-07T09:00:00Z", message = "", reason = "Accepted", status = "True", type = "Accepted" }]
              controllerName = "example.com/other"
              parentRef      = { name = "other-gw" }
            },
            {
              conditions = [
                {
                  lastTransitionTime = "2026-12-07T10:00:00Z"
                  message            = "Accepted by listener http of Gateway shop/gw."
                  observedGeneration = 1
                  reason             = "Accepted"
                  status             = "True"
                  type               = "Accepted"
                },
                {
                  lastTransitionTime = "2026-12-07T10:00:00Z"
                  message            = "Every backendRef resolves."
                  observedGeneration = 1
                  reason             = "ResolvedRefs"
                  status             = "True"
                  type               = "ResolvedRefs"
                },
              ]
              controllerName = "pipeline.dev/gateway-controller"
              parentRef      = { name = "gw", sectionName = "http" }
            },
          ]
        }
      }
      "shop/broken" = {
        apiVersion = "gateway.networking.k8s.io/v1"
        kind       = "HTTPRoute"
        metadata   = { name = "broken", namespace = "shop" }
        status = {
          parents = [
            {
              conditions = [
                {
                  lastTransitionTime = "2026-12-07T10:00:00Z"
                  message            = "Accepted by listener http of Gateway shop/gw."
                  observedGeneration = 1
                  reason             = "Accepted"
                  status             = "True"
                  type               = "Accepted"
                },
                {
                  lastTransitionTime = "2026-12-07T10:00:00Z"
                  message            = "BackendNotFound: Service shop/missing port 80. RefNotPermitted: Service data/db port 5432."
                  observedGeneration = 1
                  reason             = "BackendNotFound"
                  status             = "False"
                  type               = "ResolvedRefs"
                },
              ]
              controllerName = "pipeline.dev/gateway-controller"
              parentRef      = { name = "gw" }
            },
          ]
        }
      }
      "shop/web" = {
        apiVersion = "gateway.networking.k8s.io/v1"
        kind       = "HTTPRoute"
        metadata   = { name = "web", namespace = "shop" }
        status = {
          parents = [
            {
              conditions = [
                {
                  lastTransitionTime = "2026-12-07T10:00:00Z"
                  message            = "Accepted by listener http of Gateway shop/gw."
                  observedGeneration = 3
                  reason             = "Accepted"
                  status             = "True"
                  type               = "Accepted"
                },
                {
                  lastTransitionTime = "2026-12-07T10:00:00Z"
                  message            = "Every backendRef resolves."
                  observedGeneration = 3
                  reason             = "ResolvedRefs"
                  status             = "True"
                  type               = "ResolvedRefs"
                },
              ]
              controllerName = "pipeline.dev/gateway-controller"
              parentRef      = { name = "gw" }
            },
          ]
        }
      }
    }
  }
  expect "sink.kubernetes.gateway_status" {
    at = "0s"
    state = {
      "shop/gw" = {
        apiVersion = "gateway.networking.k8s.io/v1"
        kind       = "Gateway"
        metadata   = { name = "gw", namespace = "shop" }
        status = {
          conditions = [
            {
              lastTransitionTime = "2026-12-07T10:00:00Z"
              message            = "Accepted by pipeline.dev/gateway-controller."
              observedGeneration = 2
              reason             = "Accepted"
              status             = "True"
              type               = "Accepted"
            },
            {
              lastTransitionTime = "2026-12-07T10:00:00Z"
              message            = "Served by HAProxy at 127.0.0.1:8080."
              observedGeneration = 2
              reason             = "Programmed"
              status             = "True"
              type               = "Programmed"
            },
          ]
          listeners = [
            {
              attachedRoutes = 3
              conditions = [
                {
                  lastTransitionTime = "2026-12-07T10:00:00Z"
                  message            = "Listener http: Accepted."
                  observedGeneration = 2
                  reason             = "Accepted"
                  status             = "True"
                  type               = "Accepted"
                },
                {
                  lastTransitionTime = "2026-12-07T10:00:00Z"
                  message            = "Listener http: Programmed."
                  observedGeneration = 2
                  reason             = "Programmed"
                  status             = "True"
                  type               = "Programmed"
                },
                {
                  lastTransitionTime = "2026-12-07T10:00:00Z"
                  message            = "Listener http: ResolvedRefs."
                  observedGeneration = 2
                  reason             = "ResolvedRefs"
                  status             = "True"
                  type               = "ResolvedRefs"
                },
              ]
              name           = "http"
              supportedKinds = [{ group = "gateway.networking.k8s.io", kind = "HTTPRoute" }]
            },
          ]
        }
      }
    }
  }
  expect "sink.kubernetes.class_status" {
    at = "0s"
    state = {
      "pipeline" = {
        apiVersion = "gateway.networking.k8s.io/v1"
        kind       = "GatewayClass"
        metadata   = { name = "pipeline" }
        status = {
          conditions = [
            {
              lastTransitionTime = "2026-12-07T10:00:00Z"
              message            = "Served by pipeline (examples/gateway-api)."
              observedGeneration = 1
              reason             = "Accepted"
              status             = "True"
              type               = "Accepted"
            },
          ]
        }
      }
    }
  }

  # Rule 1 of web switches from web to api-v2; broken is deleted: its
  # traffic and its status go.
  given "source.kubernetes.routes" {
    at = "1s"
    update = {
      "shop/web" = {
        metadata = { name = "web", namespace = "shop", generation = 4, creationTimestamp = "2026-12-07T10:00:00Z" }
        spec = {
          hostnames  = ["shop.example"]
          parentRefs = [{ name = "gw" }]
          rules = [
            {
              matches     = [{ path = { type = "PathPrefix", value = "/api/" }, headers = [{ name = "X-Env", value = "canary" }] }]
              backendRefs = [{ name = "api", port = 80, weight = 3 }, { name = "api-v2", port = 80, weight = 1 }]
            },
            { backendRefs = [{ name = "api-v2", port = 80 }] },
            { matches = [{ path = { type = "Exact", value = "/healthz" } }], backendRefs = [{ name = "web", port = 80 }] },
          ]
        }
      }
    }
    delete = ["shop/broken"]
  }
  expect "sink.template.haproxy" {
    at       = "2s"
    contains = ["backend shop_web_1\n  balance roundrobin\n  server api-v2_api-v2-1:9000 10.0.2.1:9000 weight 256\n"]
  }
  expect "sink.template.haproxy" {
    at = "2s"
    keys = [
      "backend/shop_both_0", "backend/shop_web_0", "backend/shop_web_1", "backend/shop_web_2",
      "match/0/shop.example/0/9991/99/shop/web/002/000/000",
      "match/0/shop.example/1/9994/98/shop/web/000/000/000",
      "match/0/shop.example/1/9998/99/shop/web/001/000/000",
      "match/1/*.both.example/1/9998/99/shop/both/000/000/000",
      "server/shop_both_0/shop/web/10.0.0.1:8080",
      "server/shop_web_0/shop/api-v2/10.0.2.1:9000",
      "server/shop_web_0/shop/api/10.0.1.1:9000",
      "server/shop_web_0/shop/api/10.0.1.2:9000",
      "server/shop_web_1/shop/api-v2/10.0.2.1:9000",
      "server/shop_web_2/shop/web/10.0.0.1:8080",
    ]
  }
  expect "sink.kubernetes.route_status" {
    at   = "2s"
    keys = ["shop/both", "shop/web"]
  }
  # The listener counts the routes attached to it: web and both.
  expect "sink.kubernetes.gateway_status" {
    at = "2s"
    state = {
      "shop/gw" = {
        apiVersion = "gateway.networking.k8s.io/v1"
        kind       = "Gateway"
        metadata   = { name = "gw", namespace = "shop" }
        status = {
          conditions = [
            {
              lastTransitionTime = "2026-12-07T10:00:00Z"
              message            = "Accepted by pipeline.dev/gateway-controller."
              observedGeneration = 2
              reason             = "Accepted"
              status             = "True"
              type               = "Accepted"
            },
            {
              lastTransitionTime = "2026-12-07T10:00:00Z"
              message            = "Served by HAProxy at 127.0.0.1:8080."
              observedGeneration = 2
              reason             = "Programmed"
              status             = "True"
              type               = "Programmed"
            },
          ]
          listeners = [
            {
              attachedRoutes = 2
              conditions = [
                {
                  lastTransitionTime = "2026-12-07T10:00:00Z"
                  message            = "Listener http: Accepted."
                  observedGeneration = 2
                  reason             = "Accepted"
                  status             = "True"
                  type               = "Accepted"
                },
                {
                  lastTransitionTime = "2026-12-07T10:00:00Z"
                  message            = "Listener http: Programmed."
                  observedGeneration = 2
                  reason             = "Programmed"
                  status             = "True"
                  type               = "Programmed"
                },
                {
                  lastTransitionTime = "2026-12-07T10:00:00Z"
                  message            = "Listener http: ResolvedRefs."
                  observedGeneration = 2
                  reason             = "ResolvedRefs"
                  status             = "True"
                  type               = "ResolvedRefs"
                },
              ]
              name           = "http"
              supportedKinds = [{ group = "gateway.networking.k8s.io", kind = "HTTPRoute" }]
            },
          ]
        }
      }
    }
  }
}

test "a ReferenceGrant permits a backend in another namespace; listeners decide which routes attach" {
  given "source.kubernetes.classes" {
    at = "0s"
    add = { "pipeline" = {
      metadata = { name = "pipeline", generation = 1, creationTimestamp = "2026-12-07T10:00:00Z" }
      spec     = { controllerName = "pipeline.dev/gateway-controller" }
    } }
  }
  given "source.kubernetes.gateways" {
    at = "0s"
    add = { "infra/gw" = {
      metadata = { name = "gw", namespace = "infra", generation = 1, creationTimestamp = "2026-12-07T10:00:00Z" }
      spec = { gatewayClassName = "pipeline", listeners = [
        { name = "http", port = 80, protocol = "HTTP", allowedRoutes = { namespaces = { from = "All" } } },
        { name = "local", port = 8080, protocol = "HTTP" },
      ] }
    } }
  }
  given "source.kubernetes.routes" {
    at = "0s"
    add = {
      # Attaches to listener http (All); names a Service of namespace data.
      "shop/db" = {
        metadata = { name = "db", namespace = "shop", generation = 1, creationTimestamp = "2026-12-07T10:00:00Z" }
        spec     = { parentRefs = [{ name = "gw", namespace = "infra" }], rules = [{ backendRefs = [{ name = "db", namespace = "data", port = 80 }] }] }
      }
      # Listener local allows only routes of namespace infra.
      "shop/local" = {
        metadata = { name = "local", namespace = "shop", generation = 1, creationTimestamp = "2026-12-07T10:00:00Z" }
        spec     = { parentRefs = [{ name = "gw", namespace = "infra", sectionName = "local" }], rules = [{ backendRefs = [{ name = "web", port = 80 }] }] }
      }
      # No listener on port 443.
      "shop/tls" = {
        metadata = { name = "tls", namespace = "shop", generation = 1, creationTimestamp = "2026-12-07T10:00:00Z" }
        spec     = { parentRefs = [{ name = "gw", namespace = "infra", port = 443 }], rules = [{ backendRefs = [{ name = "web", port = 80 }] }] }
      }
    }
  }
  given "source.kubernetes.services" {
    at  = "0s"
    add = { "data/db" = { metadata = { name = "db", namespace = "data" }, spec = { ports = [{ port = 80 }] } } }
  }
  given "source.kubernetes.slices" {
    at = "0s"
    add = { "data/db-a" = {
      metadata  = { name = "db-a", namespace = "data", labels = { "kubernetes.io/service-name" = "db" } }
      ports     = [{ port = 5000 }]
      endpoints = [{ addresses = ["10.0.9.1"] }]
    } }
  }
  given "source.kubernetes.grants" {
    at  = "0s"
    add = {}
  }

  # Without a ReferenceGrant the backend is not permitted: the route is
  # accepted, and its rule answers 500.
  expect "sink.template.haproxy" {
    at       = "0s"
    contains = ["backend shop_db_0\n  balance roundrobin\n  http-request return status 500\n"]
  }
  given "source.kubernetes.grants" {
    at = "1s"
    add = { "data/shop-routes" = {
      metadata = { name = "shop-routes", namespace = "data" }
      spec = {
        from = [{ group = "gateway.networking.k8s.io", kind = "HTTPRoute", namespace = "shop" }]
        to   = [{ group = "", kind = "Service" }]
      }
    } }
  }
  expect "sink.template.haproxy" {
    at       = "2s"
    contains = ["  use_backend shop_db_0 if { path_beg / }\n", "backend shop_db_0\n  balance roundrobin\n  server db_10.0.9.1:5000 10.0.9.1:5000 weight 256\n"]
  }
  expect "sink.kubernetes.gateway_status" {
    at = "2s"
    state = {
      "infra/gw" = {
        apiVersion = "gateway.networking.k8s.io/v1"
        kind       = "Gateway"
        metadata   = { name = "gw", namespace = "infra" }
        status = {
          conditions = [
            { lastTransitionTime = "2026-12-07T10:00:00Z", message = "Accepted by pipeline.dev/gateway-controller.", observedGeneration = 1, reason = "Accepted", status = "True", type = "Accepted" },
            { lastTransitionTime = "2026-12-07T10:00:00Z", message = "Served by HAProxy at 127.0.0.1:8080.", observedGeneration = 1, reason = "Programmed", status = "True", type = "Programmed" },
          ]
          listeners = [
            {
              attachedRoutes = 1
              conditions = [
                { lastTransitionTime = "2026-12-07T10:00:00Z", message = "Listener http: Accepted.", observedGeneration = 1, reason = "Accepted", status = "True", type = "Accepted" },
                { lastTransitionTime = "2026-12-07T10:00:00Z", message = "Listener http: Programmed.", observedGeneration = 1, reason = "Programmed", status = "True", type = "Programmed" },
                { lastTransitionTime = "2026-12-07T10:00:00Z", message = "Listener http: ResolvedRefs.", observedGeneration = 1, reason = "ResolvedRefs", status = "True", type = "ResolvedRefs" },
              ]
              name           = "http"
              supportedKinds = [{ group = "gateway.networking.k8s.io", kind = "HTTPRoute" }]
            },
            {
              attachedRoutes = 0
              conditions = [
                { lastTransitionTime = "2026-12-07T10:00:00Z", message = "Listener local: Accepted.", observedGeneration = 1, reason = "Accepted", status = "True", type = "Accepted" },
                { lastTransitionTime = "2026-12-07T10:00:00Z", message = "Listener local: Programmed.", observedGeneration = 1, reason = "Programmed", status = "True", type = "Programmed" },
                { lastTransitionTime = "2026-12-07T10:00:00Z", message = "Listener local: ResolvedRefs.", observedGeneration = 1, reason = "ResolvedRefs", status = "True", type = "ResolvedRefs" },
              ]
              name           = "local"
              supportedKinds = [{ group = "gateway.networking.k8s.io", kind = "HTTPRoute" }]
            },
          ]
        }
      }
    }
  }
  # db resolves once permitted; local and tls are not accepted, and say why.
  expect "sink.kubernetes.route_status" {
    at = "2s"
    state = {
      "shop/db" = {
        apiVersion = "gateway.networking.k8s.io/v1"
        kind       = "HTTPRoute"
        metadata   = { name = "db", namespace = "shop" }
        status = {
          parents = [
            {
              conditions = [
                {
                  lastTransitionTime = "2026-12-07T10:00:00Z"
                  message            = "Accepted by listener http of Gateway infra/gw."
                  observedGeneration = 1
                  reason             = "Accepted"
                  status             = "True"
                  type               = "Accepted"
                },
                {
                  lastTransitionTime = "2026-12-07T10:00:00Z"
                  message            = "Every backendRef resolves."
                  observedGeneration = 1
                  reason             = "ResolvedRefs"
                  status             = "True"
                  type               = "ResolvedRefs"
                },
              ]
              controllerName = "pipeline.dev/gateway-controller"
              parentRef      = { name = "gw", namespace = "infra" }
            },
          ]
        }
      }
      "shop/local" = {
        apiVersion = "gateway.networking.k8s.io/v1"
        kind       = "HTTPRoute"
        metadata   = { name = "local", namespace = "shop" }
        status = {
          parents = [
            {
              conditions = [
                {
                  lastTransitionTime = "2026-12-07T10:00:00Z"
                  message            = "No listener of Gateway infra/gw that the parentRef selects allows this route (allowedRoutes, protocol)."
                  observedGeneration = 1
                  reason             = "NotAllowedByListeners"
                  status             = "False"
                  type               = "Accepted"
                },
                {
                  lastTransitionTime = "2026-12-07T10:00:00Z"
                  message            = "BackendNotFound: Service shop/web port 80."
                  observedGeneration = 1
                  reason             = "BackendNotFound"
                  status             = "False"
                  type               = "ResolvedRefs"
                },
              ]
              controllerName = "pipeline.dev/gateway-controller"
              parentRef      = { name = "gw", namespace = "infra", sectionName = "local" }
            },
          ]
        }
      }
      "shop/tls" = {
        apiVersion = "gateway.networking.k8s.io/v1"
        kind       = "HTTPRoute"
        metadata   = { name = "tls", namespace = "shop" }
        status = {
          parents = [
            {
              conditions = [
                {
                  lastTransitionTime = "2026-12-07T10:00:00Z"
                  message            = "Gateway infra/gw has no listener with this sectionName and port."
                  observedGeneration = 1
                  reason             = "NoMatchingParent"
                  status             = "False"
                  type               = "Accepted"
                },
                {
                  lastTransitionTime = "2026-12-07T10:00:00Z"
                  message            = "BackendNotFound: Service shop/web port 80."
                  observedGeneration = 1
                  reason             = "BackendNotFound"
                  status             = "False"
                  type               = "ResolvedRefs"
                },
              ]
              controllerName = "pipeline.dev/gateway-controller"
              parentRef      = { name = "gw", namespace = "infra", port = 443 }
            },
          ]
        }
      }
    }
  }
}
