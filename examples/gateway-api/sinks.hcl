# What the join computed goes three ways: HAProxy's configuration, and the
# status of the GatewayClasses, Gateways and HTTPRoutes.

transform "filter" "haproxy" {
  input = transform.aggregate.gateway
  where = contains(["match", "backend", "server"], record.value.kind)
}

# Quiescence: a rollout changes many endpoints in a burst; render once.
transform "debounce" "quiet" {
  input    = transform.filter.haproxy
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

transform "filter" "class_status" {
  input = transform.aggregate.gateway
  where = record.value.kind == "class_status"
}

sink "kubernetes" "class_status" {
  input         = transform.filter.class_status
  cluster       = cluster.k8s
  status        = true
  field_manager = local.field_manager
  object = {
    apiVersion = "${local.group}/v1"
    kind       = "GatewayClass"
    metadata   = { name = record.value.name }
    status     = { conditions = record.value.conditions }
  }
}

transform "filter" "gateway_status" {
  input = transform.aggregate.gateway
  where = record.value.kind == "gateway_status"
}

sink "kubernetes" "gateway_status" {
  input         = transform.filter.gateway_status
  cluster       = cluster.k8s
  status        = true
  field_manager = local.field_manager
  object = {
    apiVersion = "${local.group}/v1"
    kind       = "Gateway"
    metadata   = { name = record.value.name, namespace = record.value.namespace }
    status     = { conditions = record.value.conditions, listeners = record.value.listeners }
  }
}

transform "filter" "route_status" {
  input = transform.aggregate.gateway
  where = record.value.kind == "route_status"
}

# status.parents is an atomic list (x-kubernetes-list-type: atomic in the
# standard CRDs): an apply sends it whole, the other controllers' entries
# included as last read, and takes it over from the controller that wrote
# it last (force_conflicts), which takes it back at its next write.
sink "kubernetes" "route_status" {
  input           = transform.filter.route_status
  cluster         = cluster.k8s
  status          = true
  field_manager   = local.field_manager
  force_conflicts = true
  object = {
    apiVersion = "${local.group}/v1"
    kind       = "HTTPRoute"
    metadata   = { name = record.value.name, namespace = record.value.namespace }
    status     = { parents = record.value.parents }
  }
}
