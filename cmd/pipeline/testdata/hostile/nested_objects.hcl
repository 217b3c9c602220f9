# run: validate -> 1
# summary: Configuration nested too deeply
locals {
  x = @@repeat 100000 { a = @@1@@repeat 100000  }@@
}
