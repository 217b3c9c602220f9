locals {
  a = "${local.b}-a" # ERROR: Cycle in local values
  b = "${local.c}-b"
  c = "${local.a}-c"
  d = local.d # ERROR: Cycle in local values
}

source "static" "nets" {
  records = { (local.a) = 1, (local.d) = 2 }
}

sink "log" "out" {
  input = source.static.nets
}
