# 500,000 [*] splats: a fatal stack overflow in the parser when not counted.
# run: validate -> 1
# summary: Expression too long
locals {
  x = [1]
  y = local.x@@repeat 500000 [*]@@
}
