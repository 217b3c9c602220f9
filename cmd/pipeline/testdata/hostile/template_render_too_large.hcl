# Nested loops over 20,000 records ask for more than a gigabyte: the
# render stops at max_size (64 MiB by default) and plan fails with it.
# run: plan -> 1
# summary: more than max_size
locals {
  big = [@@repeat 20000 "x",@@]
}

source "static" "s" {
  records = { for i, x in local.big : format("k%05d", i) => { x = x } }
}

sink "template" "t" {
  input    = source.static.s
  path     = "/tmp/pipeline-hostile-too-large.cfg"
  template = "%{ for a in records }%{ for b in records }${a.key}-${b.key}\n%{ endfor }%{ endfor }"
}
