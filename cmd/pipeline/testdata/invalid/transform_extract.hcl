source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

transform "extract" "unknown_root" {
  input = source.static.nets
  key   = item.key # ERROR: Invalid reference
}

transform "extract" "no_key" { # ERROR: Missing required argument
  input = source.static.nets
  value = object
}

transform "extract" "typos" {
  input    = source.static.nets
  where    = objekt.network == "internal" # ERROR: Invalid reference
  for_each = object.ips
  key      = each.value
  value    = { network = upper(object.network), zone = var.zone } # ERROR: Reference to undeclared variable
}

transform "extract" "bad_jsonpath" {
  input = source.static.nets
  key   = jsonpath(object, "{.metadata.name") # ERROR: Invalid function argument
}

transform "extract" "functions" {
  input = source.static.nets
  key   = lowr(object.network) # ERROR: Call to unknown function
  value = jsonpath(object) # ERROR: Not enough function arguments
}

sink "log" "a" {
  input = transform.extract.unknown_root
}

sink "log" "b" {
  input = transform.extract.no_key
}

sink "log" "c" {
  input = transform.extract.typos
}

sink "log" "d" {
  input = transform.extract.bad_jsonpath
}

sink "log" "e" {
  input = transform.extract.functions
}
