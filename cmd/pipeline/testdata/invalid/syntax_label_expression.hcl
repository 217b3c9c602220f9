variable "name" {
  default = "nets"
}

source "static" var.name { # ERROR: Invalid block definition
  records = {}
}
