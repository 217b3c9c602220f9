# A block whose closing brace is missing: the parser reports where it opened.
source "static" "nets" { # ERROR: Unclosed configuration block
  records = { "10.0.0.0/8" = { network = "internal" } }

sink "log" "out" {
  input = source.static.nets
}
