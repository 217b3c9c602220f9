# A number of ten million decimal digits, written in nine characters.
# run: validate -> 1
# summary: Invalid number
# run: plan -> 1
source "static" "s" {
  records = { a = 1e9999999 }
}
sink "log" "out" {
  input = source.static.s
  path  = "-"
}
