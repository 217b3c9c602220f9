locals {
  prefix = "pods"
  full   = "${local.prefx}.all" # ERROR: Reference to undeclared local value
  other  = local.missing # ERROR: Reference to undeclared local value
}

source "static" "nets" {
  records = { "10.0.0.0/8" = { name = local.name } } # ERROR: Reference to undeclared local value
}

sink "log" "out" {
  input = source.static.nets
  path  = "${local.full}.log"
}
