# jsondecode of arrays nested a million deep: a fatal stack overflow in the decoder.
# run: validate -> 1
# summary: Invalid function argument
locals {
  x = jsondecode("@@repeat 1000000 [@@@@repeat 1000000 ]@@")
}
