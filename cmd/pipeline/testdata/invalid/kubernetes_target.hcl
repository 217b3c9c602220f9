source "kubernetes" "nothing" { # ERROR: Missing resource
}

source "kubernetes" "both" {
  resource = "pods"
  kind     = "Pod" # ERROR: Conflicting resource and kind
}

source "kubernetes" "group_version" {
  resource    = "deployments"
  api_version = "apps/v1" # ERROR: Conflicting resource and api_version
}

source "kubernetes" "plural" {
  resource = "Pods" # ERROR: Invalid resource
}

source "kubernetes" "kind_only" {
  kind = "Deployment" # ERROR: Missing api_version
}

source "kubernetes" "bad_version" {
  api_version = "apps/v1/beta" # ERROR: Invalid api_version
  kind        = "Deployment"
}

source "kubernetes" "namespaces" {
  resource         = "pods"
  namespace        = "shop"
  namespaced_watch = true # ERROR: Conflicting namespace settings
  store            = "cache" # ERROR: Invalid value for store
  cache_ttl        = "0s" # ERROR: Invalid cache_ttl
  disconnect_after = "0s" # ERROR: Invalid disconnect_after
}

sink "log" "a" {
  input = source.kubernetes.nothing
}

sink "log" "b" {
  input = source.kubernetes.both
}

sink "log" "g" {
  input = source.kubernetes.group_version
}

sink "log" "c" {
  input = source.kubernetes.plural
}

sink "log" "d" {
  input = source.kubernetes.kind_only
}

sink "log" "e" {
  input = source.kubernetes.bad_version
}

sink "log" "f" {
  input = source.kubernetes.namespaces
}
