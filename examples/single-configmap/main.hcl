# A single-resource watch: one named ConfigMap, each of its data entries a
# record, changes delivered at once (no debounce).

source "kubernetes" "haproxy_config" {
  resource  = "configmaps"
  namespace = "ingress"
  name      = "haproxy-config"
}

transform "extract" "settings" {
  input    = source.kubernetes.haproxy_config
  for_each = try(object.data, {})
  key      = each.key
  value    = each.value
}

sink "log" "settings" {
  input  = transform.extract.settings
  format = "json"
}
