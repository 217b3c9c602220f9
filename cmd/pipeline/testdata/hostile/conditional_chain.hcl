# run: validate -> 1
# summary: Expression too long
locals {
  x = @@repeat 100000 true ? 1 : @@1
}
