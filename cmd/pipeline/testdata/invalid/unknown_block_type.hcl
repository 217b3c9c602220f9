sorce "static" "nets" { # ERROR: Unsupported block type
  records = {}
}

resource "log" "out" { # ERROR: Unsupported block type
}

terraform { # ERROR: Unsupported block type
}

Source "static" "upper" { # ERROR: Unsupported block type
  records = {}
}
