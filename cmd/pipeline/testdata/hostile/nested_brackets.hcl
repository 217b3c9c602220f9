# run: validate -> 1
# run: fmt -check -> 2
# summary: Configuration nested too deeply
locals {
  x = @@repeat 100000 [@@1@@repeat 100000 ]@@
}
