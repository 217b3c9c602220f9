source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "log" "first" {
  input = source.static.nets
}

sink "log" "second" {
  input = sink.log.first # ERROR: Invalid input reference
}
