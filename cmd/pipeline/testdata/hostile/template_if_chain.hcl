# 100,000 nested %{if} directives: seconds and a gigabyte, accepted.
# run: validate -> 1
# summary: Configuration nested too deeply
locals {
  x = <<EOT
@@repeat 100000 %{if true}@@x@@repeat 100000 %{endif}@@
EOT
}
