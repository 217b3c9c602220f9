locals {
  subnet_too_small = cidrsubnet("10.0.0.0/30", 4, 1) # ERROR: Invalid function argument
  netnum_too_big   = cidrsubnet("10.0.0.0/8", 8, 256) # ERROR: Invalid function argument
  not_a_cidr       = cidrhost("10.0.0.300/8", 1) # ERROR: Invalid function argument
  host_too_big     = cidrhost("10.0.0.0/30", 9) # ERROR: Invalid function argument
  unknown_function = lowr("X") # ERROR: Call to unknown function
  missing_file     = file("no-such-file.txt") # ERROR: Invalid function argument
  bad_json         = jsondecode("{not json") # ERROR: Error in function call
  too_few_args     = join(",") # ERROR: Error in function call
  wrong_arg_type   = upper(["a"]) # ERROR: Invalid function argument
  format_mismatch  = format("%d", "x") # ERROR: Error in function call
}

source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

sink "log" "out" {
  input = source.static.nets
}
