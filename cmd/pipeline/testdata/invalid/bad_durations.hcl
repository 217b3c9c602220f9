source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "log" "parsecs" {
  input  = source.static.nets
  resync = "10 parsecs" # ERROR: Invalid duration
}

sink "log" "negative" {
  input  = source.static.nets
  resync = "-1s" # ERROR: Invalid duration
}

sink "log" "no_unit" {
  input  = source.static.nets
  resync = 30 # ERROR: Invalid duration
}

sink "log" "list" {
  input  = source.static.nets
  resync = ["1s"] # ERROR: Incorrect attribute value type
}

sink "log" "empty" {
  input  = source.static.nets
  resync = "" # ERROR: Invalid duration
}
