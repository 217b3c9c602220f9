# Fixture of TestOptionErrors: -var and PIPELINE_VAR_ settings that fail.
variable "port" {
  type    = number
  default = 4222
}

variable "zones" {
  type    = list(string)
  default = []
}

variable "pin" {
  type      = number
  sensitive = true
  default   = 1234
}

source "static" "nets" {
  records = { "10.0.0.0/8" = { port = var.port, zones = var.zones, pin = var.pin } }
}

sink "log" "out" {
  input = source.static.nets
}
