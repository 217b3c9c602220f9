source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "log" "out" {
  input = source.static.net # ERROR: Reference to undeclared node
}

sink "log" "other" {
  input = source.static.nodes # ERROR: Reference to undeclared node
}

sink "log" "used" {
  input = source.static.nets
}
