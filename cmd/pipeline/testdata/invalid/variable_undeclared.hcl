variable "bucket" {
  type    = string
  default = "pods"
}

locals {
  subject = "pods.${var.subjet}" # ERROR: Reference to undeclared variable
}

source "static" "nets" {
  records = { "10.0.0.0/8" = { bucket = var.buckets } } # ERROR: Reference to undeclared variable
}

sink "nats_kv" "state" {
  input  = source.static.nets
  url    = var.url # ERROR: Reference to undeclared variable
  bucket = var.bucket
}

sink "nats" "events" {
  input   = source.static.nets
  url     = "nats://localhost:4222"
  subject = "${local.subject}.${var.kind}.${record.key}" # ERROR: Reference to undeclared variable
}
