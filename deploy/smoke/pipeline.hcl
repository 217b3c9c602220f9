# The configuration `make image-test` runs in the image: no cluster, no
# kernel map, just records printed to standard output.
source "static" "networks" {
  records = {
    "10.0.0.0/8"     = { name = "internal" }
    "192.168.0.0/16" = { name = "office" }
  }
}

sink "log" "networks" {
  input = source.static.networks
}
