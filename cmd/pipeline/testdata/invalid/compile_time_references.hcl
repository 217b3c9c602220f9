source "static" "nets" {
  records = { (record.key) = 1 } # ERROR: Invalid reference
}

source "static" "copy" {
  records = source.static.nets # ERROR: Invalid reference
}

sink "log" "out" {
  input = source.static.nets
  path  = "${record.key}.log" # ERROR: Invalid reference
}

sink "log" "copy" {
  input = source.static.copy
}
