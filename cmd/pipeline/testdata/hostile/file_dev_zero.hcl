# run: validate -> 1
# summary: Invalid function argument
locals {
  x = file("/dev/zero")
}
