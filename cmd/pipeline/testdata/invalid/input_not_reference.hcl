source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "log" "quoted" {
  input = "source.static.nets" # ERROR: Invalid reference
}

sink "log" "template" {
  input = "${source.static.nets}" # ERROR: Invalid reference
}

sink "log" "short" {
  input = source.static # ERROR: Invalid input reference
}

sink "log" "long" {
  input = source.static.nets.records # ERROR: Invalid input reference
}

sink "log" "indexed" {
  input = source.static["nets"] # ERROR: Invalid input reference
}

sink "log" "variable" {
  input = var.upstream # ERROR: Invalid input reference
}

sink "log" "used" {
  input = source.static.nets
}
