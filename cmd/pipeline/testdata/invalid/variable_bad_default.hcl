variable "port" {
  type    = number
  default = "eighty" # ERROR: Invalid default value for variable
}

variable "tags" {
  type    = list(string)
  default = { a = "b" } # ERROR: Invalid default value for variable
}

variable "limits" {
  type = object({ cpu = number, memory = string })
  default = { # ERROR: Invalid default value for variable
    cpu = 1
  }
}

variable "enabled" {
  type    = bool
  default = "maybe" # ERROR: Invalid default value for variable
}

source "static" "nets" {
  records = { "10.0.0.0/8" = { port = var.port, tags = var.tags, enabled = var.enabled, limits = var.limits } }
}

sink "log" "out" {
  input = source.static.nets
}
