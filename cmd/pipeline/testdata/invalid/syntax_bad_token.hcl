source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "log" "out" {
  input = source.static.nets
  path  = @out.log # ERROR: Invalid character # ERROR: Invalid expression
}
