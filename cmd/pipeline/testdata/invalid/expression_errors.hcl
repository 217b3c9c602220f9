variable "ports" {
  type    = list(number)
  default = [80, 443]
}

source "static" "nets" {
  records = { "10.0.0.0/8" = { port = var.ports[5] } } # ERROR: Invalid index
}

sink "log" "out" {
  input  = source.static.nets
  format = true ? 1 : "text" # ERROR: Invalid value for format
  path   = "out" * 2 # ERROR: Invalid operand
}
