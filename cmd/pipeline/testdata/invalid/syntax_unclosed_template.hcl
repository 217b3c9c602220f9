variable "prefix" {
  default = "pods"
}

source "static" "nets" {
  records = { "10.0.0.0/8" = "${var.prefix" } # ERROR: Unclosed template interpolation sequence # ERROR: Invalid multi-line string
} # ERROR: Invalid multi-line string
