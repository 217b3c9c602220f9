# Namespace policies: every namespace labelled netpol=default-deny gets a
# NetworkPolicy that denies ingress except from pods of the tier its
# netpol-tier label names. The policy follows the label, is pruned 30s
# after the label goes (the grace period), comes back when deleted by hand,
# and a field edited by hand is restored at the next resync.
#
#   pipeline plan examples/namespace-policies    # the API server's own dry run, field by field
#   pipeline explain shop/default-deny            # the object, its last apply and its owner
#   pipeline manifests examples/namespace-policies  # RBAC: get/list/watch/create/patch/delete networkpolicies

variable "kubeconfig" {
  type    = string
  default = "~/.kube/config"
}

variable "grace" {
  type    = string
  default = "30s"
}

variable "resync" {
  type    = string
  default = "1m"
}

cluster "prod" {
  kubeconfig = var.kubeconfig
}

source "kubernetes" "namespaces" {
  cluster  = cluster.prod
  resource = "namespaces"
  selector = "netpol=default-deny"
}

transform "grace_period" "drain" {
  input = source.kubernetes.namespaces
  delay = var.grace
}

# owner_value is the sink's identity: it lists, updates and prunes only the
# objects carrying it that it wrote, wherever the configuration runs from.
sink "kubernetes" "default_deny" {
  input           = transform.grace_period.drain
  cluster         = cluster.prod
  force_conflicts = true # a hand edit of a field the sink sets is undone
  owner_value     = "namespace-policies.default-deny"
  resync          = var.resync
  object = {
    apiVersion = "networking.k8s.io/v1"
    kind       = "NetworkPolicy"
    metadata   = { name = "default-deny", namespace = record.value.metadata.name }
    spec = {
      podSelector = {}
      policyTypes = ["Ingress"]
      ingress = [{
        from = [{ podSelector = { matchLabels = { tier = lookup(record.value.metadata.labels, "netpol-tier", "frontend") } } }]
      }]
    }
  }
}
