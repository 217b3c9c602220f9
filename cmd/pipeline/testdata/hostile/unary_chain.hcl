# run: validate -> 1
# summary: Configuration nested too deeply
locals {
  x = @@repeat 100000 -@@1
}
