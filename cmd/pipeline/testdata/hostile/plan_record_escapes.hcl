# Record keys and values carrying a window title set, a screen clear, a C1
# CSI and a bidi override are printed escaped by plan.
# run: plan -> 0
# summary: The initial sync would emit
source "static" "a" {
  records = {
    "k-\u001b]0;pwned\u0007\u001b[2J" = { v = "\u009b2J\u202eevil\u001b[2J" }
  }
}
sink "log" "out" {
  input = source.static.a
  path  = "/dev/null"
}
