# A Gateway API controller in one configuration: the Gateways of the
# GatewayClasses whose spec.controllerName is var.controller_name, and the
# HTTPRoutes attached to them, are served by HAProxy (rendered haproxy.cfg,
# checked, swapped in and reloaded, or updated over HAProxy's runtime socket
# when only servers change), and their status is written back as the
# Gateway API specifies: GatewayClass Accepted, Gateway Accepted and
# Programmed with each listener's attachedRoutes, and one entry of
# status.parents per parentRef of an HTTPRoute.
#
#   kubectl apply -f $(go env GOMODCACHE)/sigs.k8s.io/gateway-api@v1.6.3/config/crd/standard/
#   haproxy -W -D -f /etc/haproxy/haproxy.cfg -p /run/haproxy.pid
#   pipeline run examples/gateway-api
#
# See docs/gateway-api.md for what of the spec is supported.

variable "kubeconfig" {
  type    = string
  default = "~/.kube/config"
}

variable "namespace" {
  type        = string
  default     = ""
  description = "Namespace of the Gateways, HTTPRoutes, Services, EndpointSlices and ReferenceGrants watched; empty watches every namespace."
}

variable "controller_name" {
  type        = string
  default     = "pipeline.dev/gateway-controller"
  description = "The spec.controllerName of the GatewayClasses this configuration serves."
}

variable "config" {
  type        = string
  default     = "/etc/haproxy/haproxy.cfg"
  description = "The file HAProxy reads."
}

variable "pid_file" {
  type    = string
  default = "/run/haproxy.pid"
}

variable "runtime_socket" {
  type        = string
  default     = "/run/haproxy/admin.sock"
  description = "HAProxy's runtime API socket (stats socket, level admin)."
}

variable "listen" {
  type        = string
  default     = "127.0.0.1:8080"
  description = "Address of HAProxy's HTTP frontend, which serves every HTTP listener of the Gateways."
}

variable "quiet" {
  type        = string
  default     = "500ms"
  description = "Quiescence: render once the input has been quiet this long."
}

variable "drain" {
  type        = string
  default     = "5s"
  description = "How long a removed endpoint keeps receiving traffic."
}

locals {
  # The field manager of the status writes; the routes' managedFields show
  # which status this configuration wrote.
  field_manager = "pipeline.gateway-api"
  group         = "gateway.networking.k8s.io"
}

cluster "k8s" {
  kubeconfig = var.kubeconfig
}

source "kubernetes" "classes" {
  cluster  = cluster.k8s
  resource = "gatewayclasses"
  group    = local.group
}

source "kubernetes" "gateways" {
  cluster   = cluster.k8s
  resource  = "gateways"
  group     = local.group
  namespace = var.namespace
}

source "kubernetes" "routes" {
  cluster   = cluster.k8s
  resource  = "httproutes"
  group     = local.group
  namespace = var.namespace
}

source "kubernetes" "services" {
  cluster   = cluster.k8s
  resource  = "services"
  namespace = var.namespace
}

source "kubernetes" "slices" {
  cluster   = cluster.k8s
  resource  = "endpointslices"
  group     = "discovery.k8s.io"
  namespace = var.namespace
  selector  = "kubernetes.io/service-name"
}

source "kubernetes" "grants" {
  cluster   = cluster.k8s
  resource  = "referencegrants"
  group     = local.group
  namespace = var.namespace
}

# Each kind becomes records carrying a `kind`, with only what the join
# reads. `changed` is the time of the object's last write (the newest time
# of its managedFields): a condition whose status changes takes it as its
# lastTransitionTime, one that keeps its status keeps its time.

transform "extract" "classes" {
  input = source.kubernetes.classes
  where = object.spec.controllerName == var.controller_name
  key   = "class/${object.metadata.name}"
  value = {
    kind       = "class"
    name       = object.metadata.name
    generation = object.metadata.generation
    conditions = try(object.status.conditions, [])
    changed    = try(sort([for m in object.metadata.managedFields : m.time])[length(object.metadata.managedFields) - 1], object.metadata.creationTimestamp)
  }
}

transform "extract" "gateways" {
  input = source.kubernetes.gateways
  key   = "gateway/${object.metadata.namespace}/${object.metadata.name}"
  value = {
    kind       = "gateway"
    namespace  = object.metadata.namespace
    name       = object.metadata.name
    class      = object.spec.gatewayClassName
    generation = object.metadata.generation
    conditions = try(object.status.conditions, [])
    changed    = try(sort([for m in object.metadata.managedFields : m.time])[length(object.metadata.managedFields) - 1], object.metadata.creationTimestamp)
    listeners = [for l in object.spec.listeners : {
      name       = l.name
      port       = l.port
      protocol   = l.protocol
      from       = try(l.allowedRoutes.namespaces.from, "Same")
      conditions = try([for s in object.status.listeners : s.conditions if s.name == l.name][0], [])
    }]
  }
}

transform "extract" "routes" {
  input = source.kubernetes.routes
  key   = "route/${object.metadata.namespace}/${object.metadata.name}"
  value = {
    kind       = "route"
    namespace  = object.metadata.namespace
    name       = object.metadata.name
    generation = object.metadata.generation
    changed    = try(sort([for m in object.metadata.managedFields : m.time])[length(object.metadata.managedFields) - 1], object.metadata.creationTimestamp)
    # The hostnames, or one empty name (any host) when there are none.
    hosts = concat(try(object.spec.hostnames, []), length(try(object.spec.hostnames, [])) == 0 ? [""] : [])
    parents = [for p in try(object.spec.parentRefs, []) : {
      ref        = p
      gateway    = "${try(p.namespace, object.metadata.namespace)}/${p.name}"
      section    = try(p.sectionName, "")
      port       = try(p.port, 0)
      is_gateway = try(p.group, local.group) == local.group && try(p.kind, "Gateway") == "Gateway"
      id         = "${try(p.group, local.group)}/${try(p.kind, "Gateway")}/${try(p.namespace, object.metadata.namespace)}/${p.name}/${try(p.sectionName, "")}/${try(p.port, "")}"
    }]
    rules = [for r in try(object.spec.rules, [{}]) : {
      matches = [for m in try(r.matches, [{}]) : {
        path_type = try(m.path.type, "PathPrefix")
        path      = try(m.path.value, "/")
        headers   = [for h in try(m.headers, []) : { name = lower(h.name), value = h.value, type = try(h.type, "Exact") }]
      }]
      backends = [for b in try(r.backendRefs, []) : {
        group     = try(b.group, "")
        kind      = try(b.kind, "Service")
        namespace = try(b.namespace, object.metadata.namespace)
        name      = b.name
        port      = try(b.port, 0)
        weight    = try(b.weight, 1)
      }]
    }]
    # Other controllers' entries of status.parents, kept as they are: the
    # list is atomic, so each write sends it whole.
    others = [for e in try(object.status.parents, []) : e if e.controllerName != var.controller_name]
    # This controller's conditions per parentRef, for their lastTransitionTime.
    ours = { for e in try(object.status.parents, []) : "${try(e.parentRef.group, local.group)}/${try(e.parentRef.kind, "Gateway")}/${try(e.parentRef.namespace, object.metadata.namespace)}/${e.parentRef.name}/${try(e.parentRef.sectionName, "")}/${try(e.parentRef.port, "")}" => e.conditions... if e.controllerName == var.controller_name }
    # Whether this configuration's field manager wrote the status: while it
    # did, it keeps writing it (its entries removed when the route leaves).
    managed = length([for m in try(object.metadata.managedFields, []) : m if m.manager == local.field_manager && try(m.subresource, "") == "status"]) > 0
  }
}

transform "extract" "services" {
  input = source.kubernetes.services
  key   = "service/${object.metadata.namespace}/${object.metadata.name}"
  value = {
    kind      = "service"
    namespace = object.metadata.namespace
    name      = object.metadata.name
    ports     = [for p in try(object.spec.ports, []) : { port = p.port, name = try(p.name, "") }]
  }
}

# One record per ready address and port of an EndpointSlice (ready unset
# counts as ready, as Kubernetes says).
transform "extract" "endpoints" {
  input = source.kubernetes.slices
  for_each = flatten([for ep in try(object.endpoints, []) : [
    for a in ep.addresses : [for p in try(object.ports, []) : { address = a, name = try(ep.targetRef.name, a), port = p.port, port_name = try(p.name, "") }]
  ] if try(ep.conditions.ready, true) != false])
  key = "endpoint/${object.metadata.namespace}/${object.metadata.labels["kubernetes.io/service-name"]}/${each.value.port_name}/${each.value.address}:${each.value.port}"
  value = {
    kind      = "endpoint"
    namespace = object.metadata.namespace
    service   = object.metadata.labels["kubernetes.io/service-name"]
    port_name = each.value.port_name
    name      = each.value.name
    address   = each.value.address
    port      = each.value.port
  }
}

# A removed endpoint keeps its traffic for a while: the pod is still
# shutting down, and every proxy does not hear of it at once.
transform "grace_period" "drain" {
  input = transform.extract.endpoints
  delay = var.drain
}

# What a ReferenceGrant permits: HTTPRoutes of namespace FROM may name
# Services of its own namespace (one, or all when `to` has no name).
transform "extract" "grants" {
  input = source.kubernetes.grants
  for_each = flatten([for f in object.spec.from : [
    for t in object.spec.to : "${f.namespace}/${object.metadata.namespace}/${try(t.name, "")}" if try(t.group, "") == "" && t.kind == "Service"
  ] if f.group == local.group && f.kind == "HTTPRoute"])
  key   = "grant/${object.metadata.namespace}/${object.metadata.name}/${each.key}"
  value = { kind = "grant", permits = each.value }
}
