source "kubernetes" "pods" {
  resource = "pods"
  index_by = [
    "{.metadata.namespace}",
    "{.metadata.name", # ERROR: Invalid index_by path
    "{.status.podIPs[}", # ERROR: Invalid index_by path
  ]
  ignore_fields = ["{.metadata.managedFields}", "{..}"] # ERROR: Invalid ignore_fields path
}

sink "log" "out" {
  input = source.kubernetes.pods
}
