source "static" { # ERROR: Missing name for source
  records = {}
}

sink "log" "out" "extra" { # ERROR: Extraneous label for sink
  input = source.static.nets
}

locals "named" { # ERROR: Extraneous label for locals
  a = 1
}

variable { # ERROR: Missing name for variable
}
