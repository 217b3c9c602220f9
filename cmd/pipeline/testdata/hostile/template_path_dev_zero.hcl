# A template sink whose path is /dev/zero: plan refuses it at once, and
# never reads it.
# run: plan -> 1
# summary: is not a regular file
source "static" "s" {
  records = { a = { ip = "10.0.0.1" } }
}

sink "template" "t" {
  input    = source.static.s
  path     = "/dev/zero"
  template = "%{ for r in records }${r.key} ${r.value.ip}\n%{ endfor }"
}
