# Nested loops over 10,000 records ask for more than a gigabyte: the
# render stops at max_size (64 MiB by default) and plan fails with it.
# run: plan -> 1
# summary: more than max_size
source "static" "s" {
  records = { for i in range(10000) : format("k%05d", i) => { i = i } }
}

sink "template" "t" {
  input    = source.static.s
  path     = "/tmp/pipeline-hostile-too-large.cfg"
  template = "%{ for a in records }%{ for b in records }${a.key}-${b.key}\n%{ endfor }%{ endfor }"
}
