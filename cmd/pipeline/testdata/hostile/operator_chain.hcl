# run: validate -> 1
# summary: Expression too long
locals {
  x = 1@@repeat 200000  + 1@@
}
