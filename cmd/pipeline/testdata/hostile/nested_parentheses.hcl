# A hundred thousand nested parentheses overflowed the HCL parser's stack
# (a fatal error no recover() catches).
# run: validate -> 1
# run: validate -json -> 1
# run: fmt -check -> 2
# run: graph -> 1
# summary: Configuration nested too deeply
locals {
  x = @@repeat 100000 (@@1@@repeat 100000 )@@
}
