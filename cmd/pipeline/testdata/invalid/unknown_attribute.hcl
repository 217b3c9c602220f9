source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
  recrods = {} # ERROR: Unsupported argument
}

sink "log" "out" {
  input  = source.static.nets
  pth    = "out.log" # ERROR: Unsupported argument
  format = "json"
  colour = true # ERROR: Unsupported argument
}
