# A required variable with no -var, no PIPELINE_VAR_ and no default: the
# error points at its declaration, and the attributes that use it stay quiet.
variable "nats_url" { # ERROR: No value for required variable
  type = string
}

source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "nats_kv" "state" {
  input  = source.static.nets
  url    = var.nats_url
  bucket = "pods-${lower(var.nats_url)}"
}
