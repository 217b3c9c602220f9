source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

transform "filter" "object_root" {
  input = source.static.nets
  where = object.network == "internal" # ERROR: Invalid reference
}

transform "filter" "no_where" { # ERROR: Missing required argument
  input = source.static.nets
}

transform "filter" "bad_operand" {
  input = source.static.nets
  where = record.value.network == "internal" && "yes" # ERROR: Invalid operand
}

# HCL skips the right operand of || when the left one is unknown, as
# record is when the configuration loads; its errors are still reported.
transform "filter" "short_circuit" {
  input = source.static.nets
  where = record.key == "x" || startswith(record.key, "10.") # ERROR: Call to unknown function
}

sink "log" "a" {
  input = transform.filter.object_root
}

sink "log" "b" {
  input = transform.filter.no_where
}

sink "log" "c" {
  input = transform.filter.bad_operand
}

sink "log" "d" {
  input = transform.filter.short_circuit
}
