cluster "prod" {
  in_cluster = true
}

source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "log" "cluster" {
  input = cluster.prod # ERROR: Invalid input reference
}

sink "log" "local" {
  input = local.upstream # ERROR: Invalid input reference
}

sink "log" "kind_typo" {
  input = sources.static.nets # ERROR: Invalid input reference
}

sink "log" "transform" {
  input = transform.static.nets # ERROR: Reference to undeclared node
}

sink "log" "used" {
  input = source.static.nets
}
