source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal } } # ERROR: Unterminated template string # ERROR: Invalid multi-line string
} # ERROR: Invalid multi-line string
