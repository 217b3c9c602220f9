# 1/0 is +Inf: plan --json could not encode it and the log sink retried forever.
# run: validate -> 1
# summary: Invalid number
# run: plan --json -> 1
source "static" "s" {
  records = { a = 1/0 }
}
sink "log" "out" {
  input = source.static.s
  path  = "-"
}
