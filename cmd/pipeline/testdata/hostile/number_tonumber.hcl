# tonumber and jsondecode of a number of ten million digits.
# run: validate -> 1
# summary: Error in function call
locals {
  x = tonumber("1e9999999")
  y = jsondecode("1e9999999")
}
