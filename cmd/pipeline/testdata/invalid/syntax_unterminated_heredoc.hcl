source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "log" "out" {
  input = source.static.nets
  path = <<EOT
out.log
}
# The heredoc never ends: the error is at the end of the file. # ERROR: Unterminated template string