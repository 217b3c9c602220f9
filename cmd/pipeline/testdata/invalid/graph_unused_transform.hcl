source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

transform "debounce" "batch" {
  input = source.static.nets
}

transform "filter" "dangling" { # WARNING: Unused transform
  input = transform.debounce.batch
  where = record.key != ""
}

sink "log" "out" {
  input = transform.debounce.batch
}
