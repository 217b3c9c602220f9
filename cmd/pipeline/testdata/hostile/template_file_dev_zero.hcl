# A template_file that is /dev/zero: validate refuses it at once, and
# never reads it.
# run: validate -> 1
# summary: Cannot read template file
source "static" "s" {
  records = { a = { ip = "10.0.0.1" } }
}

sink "template" "t" {
  input         = source.static.s
  path          = "/tmp/pipeline-hostile-template.cfg"
  template_file = "/dev/zero"
}
