variable "1st" { # ERROR: Invalid variable name
  default = 1
}

cluster "prod-eu" { # ERROR: Invalid cluster name
  in_cluster = true
}

source "static" "my-nets" { # ERROR: Invalid source name
  records = {}
}

source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "log" "out.log" { # ERROR: Invalid sink name
  input = source.static.nets
}

sink "log" "" { # ERROR: Invalid sink name
  input = source.static.nets
}

sink "log" "ok" {
  input = source.static.nets
}
