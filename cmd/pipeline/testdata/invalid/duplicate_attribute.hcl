source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "log" "out" {
  input  = source.static.nets
  format = "text"
  format = "json" # ERROR: Attribute redefined
}
