# Blocks of every file of a directory share one namespace.
variable "bucket" {
  default = "pods"
}

source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "log" "out" {
  input = source.static.nets
}
