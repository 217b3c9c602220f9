source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "log" "out" {
  input = source.static.nets
  selector { # ERROR: Unsupported block type
    key = "app"
  }
  path { # ERROR: Unsupported block type
  }
}
