# A title set and a screen clear inside a diagnostic are printed escaped.
# run: validate -> 1
# summary: Invalid operand
locals {
  x = "@@repeat 1 \x1b]0;pwned\x07\x1b[2J@@" + 1
}
