locals {
  port  = 80
  sum   = local.port + "eighty" # ERROR: Invalid operand
  label = upper(local.port, 2) # ERROR: Too many function arguments
  ref   = record.key # ERROR: Invalid reference
}

source "static" "nets" {
  records = { "10.0.0.0/8" = { sum = local.sum, label = local.label } }
}

sink "log" "out" {
  input = source.static.nets
}
