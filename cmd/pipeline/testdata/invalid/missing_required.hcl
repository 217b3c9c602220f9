source "static" "nets" { # ERROR: Missing required argument
}

source "static" "more" {
  records = null # ERROR: Missing required argument
}

sink "audit" "trail" { # ERROR: Missing required argument
  input = source.static.nets
}

sink "nats" "events" { # ERROR: Missing required argument
  input = source.static.more
}
