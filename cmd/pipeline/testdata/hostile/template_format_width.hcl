# format with a width Go's fmt cannot honour, over many records: plan
# fails with a render error, and never writes Go's error text.
# run: plan -> 1
# summary: is larger than 4096
source "static" "s" {
  records = { a = { ip = "10.0.0.1" } }
}

sink "template" "t" {
  input    = source.static.s
  path     = "/tmp/pipeline-hostile-format.cfg"
  template = "%{ for r in records }${format("%01000000000d", 1)}\n%{ endfor }"
}
