# A literal of five million digits: minutes of math/big when printed.
# run: validate -> 1
# summary: Invalid number
locals {
  x = @@repeat 5000000 9@@
}
