source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "log" "out" { # ERROR: Missing required argument
  path = "out.log"
}

sink "log" "null_input" {
  input = null # ERROR: Invalid input reference
}

sink "log" "used" {
  input = source.static.nets
}
