variable "kind" {
  type = strin # ERROR: Invalid type specification
}

variable "pair" {
  type = list(string, number) # ERROR: Invalid type specification
}

variable "region" {
  default   = "eu"
  defualt   = "us" # ERROR: Unsupported argument
  sensitive = "yes" # ERROR: Incorrect attribute value type
}

variable "zone" {
  default = var.region # ERROR: Variables not allowed
}

source "static" "nets" {
  records = { "10.0.0.0/8" = { kind = var.kind, pair = var.pair, zone = var.zone } }
}

sink "log" "out" {
  input = source.static.nets
}
