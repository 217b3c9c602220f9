# One run reports every problem of every phase: parsing is fine here, then
# variables, locals, node bodies, references and the graph are all checked.
variable "bucket" {
  type    = number
  default = "pods" # ERROR: Invalid default value for variable
}

locals {
  url = "nats://${local.hots}:4222" # ERROR: Reference to undeclared local value
}

source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
  extra   = 1 # ERROR: Unsupported argument
}

# Unused, but not reported while a reference is broken: the broken one may
# be what should consume it.
source "static" "idle" {
  records = {}
}

sink "nats_kv" "state" {
  input   = source.static.nest # ERROR: Reference to undeclared node
  url     = local.url
  bucket  = var.bucket
  storage = "disk" # ERROR: Invalid value for storage
  resync  = "soon" # ERROR: Invalid duration
}

sink "log" "out" {
  input  = source.static.nets
  format = "xml" # ERROR: Invalid value for format
}
