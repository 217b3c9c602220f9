variable "names" {
  type    = list(string)
  default = ["a", "b"]
}

locals {
  joined = "names: ${var.names}" # ERROR: Invalid template interpolation value
  looped = "%{ for n in var.names }${n.x}%{ endfor }" # ERROR: Unsupported attribute
}

source "static" "nets" {
  records = { "10.0.0.0/8" = { joined = local.joined, looped = local.looped } }
}

sink "log" "out" {
  input = source.static.nets
}
