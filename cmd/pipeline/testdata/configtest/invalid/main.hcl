source "static" "nets" {
  records = { "10.0.0.0/8" = { id = 1 } }
}

sink "log" "out" {
  input = source.static.nets
}
