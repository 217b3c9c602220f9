source "static" "networks" {
  records = local.records
}

sink "log" "out" {
  input = source.static.networks
}
