variable "region" {
  default = "eu"
}

variable "region" { # ERROR: Duplicate variable
  default = "us"
}

locals {
  prefix = "a"
}

locals {
  prefix = "b" # ERROR: Duplicate local value
}

cluster "prod" {
  in_cluster = true
}

cluster "prod" { # ERROR: Duplicate cluster
  in_cluster = true
}

source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

source "static" "nets" { # ERROR: Duplicate source
  records = {}
}

sink "log" "out" {
  input = source.static.nets
}

sink "log" "out" { # ERROR: Duplicate sink
  input = source.static.nets
}
