# A template ingress controller in one file: the Ingresses and the ready
# endpoints of the EndpointSlices of one namespace become haproxy.cfg,
# which `haproxy -c` checks before it is swapped in and a SIGUSR2 to
# HAProxy's master (master-worker mode, -W) loads without dropping
# established connections. An endpoint change (a server's address or
# port, a server added or removed) needs no reload: it goes over HAProxy's
# runtime socket, and the file is written to match.
#
#   haproxy -W -D -f /etc/haproxy/haproxy.cfg -p /run/haproxy.pid
#   pipeline run examples/haproxy
#
# An Ingress may add lines to its backend with the annotation
# haproxy.pipeline.dev/backend-snippet; a snippet HAProxy refuses keeps the
# running configuration, and the sink shows degraded until it is fixed.

variable "kubeconfig" {
  type    = string
  default = "~/.kube/config"
}

variable "namespace" {
  type    = string
  default = "shop"
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
  description = "Address of HAProxy's HTTP frontend."
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

cluster "k8s" {
  kubeconfig = var.kubeconfig
}

source "kubernetes" "ingresses" {
  cluster   = cluster.k8s
  resource  = "ingresses"
  group     = "networking.k8s.io"
  namespace = var.namespace
}

source "kubernetes" "slices" {
  cluster   = cluster.k8s
  resource  = "endpointslices"
  group     = "discovery.k8s.io"
  namespace = var.namespace
  selector  = "kubernetes.io/service-name"
}

# One record per Ingress path: the backend is the Service it names.
transform "extract" "routes" {
  input = source.kubernetes.ingresses
  for_each = flatten([for rule in try(object.spec.rules, []) : [
    for p in try(rule.http.paths, []) : {
      host    = try(rule.host, "")
      path    = try(p.path, "/")
      service = p.backend.service.name
    }
  ]])
  key = "route/${object.metadata.name}/${each.key}"
  value = {
    kind    = "route"
    host    = each.value.host
    path    = each.value.path
    backend = "${object.metadata.namespace}_${each.value.service}"
    snippet = try(object.metadata.annotations["haproxy.pipeline.dev/backend-snippet"], "")
  }
}

# One record per ready address of an EndpointSlice (ready unset counts as
# ready, as Kubernetes says), on the slice's first port.
transform "extract" "endpoints" {
  input = source.kubernetes.slices
  where = length(try(object.ports, [])) > 0
  for_each = flatten([for ep in try(object.endpoints, []) : [
    for a in ep.addresses : { address = a, name = try(ep.targetRef.name, a) }
  ] if try(ep.conditions.ready, true) != false])
  key = "endpoint/${object.metadata.labels["kubernetes.io/service-name"]}/${each.value.address}:${object.ports[0].port}"
  value = {
    kind    = "endpoint"
    backend = "${object.metadata.namespace}_${object.metadata.labels["kubernetes.io/service-name"]}"
    name    = each.value.name
    address = each.value.address
    port    = object.ports[0].port
  }
}

# A removed endpoint keeps its traffic for a while: the pod is still
# shutting down, and every proxy does not hear of it at once.
transform "grace_period" "drain" {
  input = transform.extract.endpoints
  delay = var.drain
}

# Quiescence: a rollout changes many endpoints in a burst; render once.
transform "debounce" "quiet" {
  inputs   = [transform.extract.routes, transform.grace_period.drain]
  interval = var.quiet
  max_wait = "5s"
}

sink "template" "haproxy" {
  input         = transform.debounce.quiet
  template_file = "haproxy.cfg.tmpl"
  path          = var.config
  backup        = true
  check_command = ["haproxy", "-c", "-f", "{{path}}"]
  reload_signal = "SIGUSR2"
  pid_file      = var.pid_file
  runtime "haproxy" {
    socket = var.runtime_socket
  }
}
