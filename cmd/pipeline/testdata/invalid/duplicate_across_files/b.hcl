variable "bucket" { # ERROR: Duplicate variable
  default = "ips"
}

source "static" "nets" { # ERROR: Duplicate source
  records = {}
}

sink "log" "also" {
  input = source.static.nets
}
