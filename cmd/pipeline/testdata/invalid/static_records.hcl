source "static" "string" {
  records = "10.0.0.0/8" # ERROR: Invalid records
}

source "static" "number" {
  records = 42 # ERROR: Invalid records
}

source "static" "null_key" {
  records = { (null) = 1 } # ERROR: Null value as key
}

source "static" "ok" {
  records = {}
}

sink "log" "a" {
  input = source.static.string
}

sink "log" "b" {
  input = source.static.number
}

sink "log" "c" {
  input = source.static.null_key
}

sink "log" "d" {
  input = source.static.ok
}
