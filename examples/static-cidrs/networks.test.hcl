# Config tests of the static networks: `pipeline test examples/static-cidrs`.
# A source in a test holds only what its givens say, so the networks the
# configuration declares are given here as `pipeline plan` lists them:
# local.office is 192.168.0.0/16 and cidrsubnet("172.16.0.0/12", 4, 3) is
# 172.19.0.0/16.

test "each network is an LPM entry holding its id and its NUL-padded name" {
  given "source.static.networks" {
    at = "0s"
    add = {
      "10.0.0.0/8"     = { id = 1, name = "internal" }
      "192.168.0.0/16" = { id = 2, name = "office" }
      "172.19.0.0/16"  = { id = 3, name = "vpn" }
    }
  }

  # A value is the struct's 20 bytes: id, a u32 in native byte order, then
  # name, a string(16) padded with NULs.
  expect "sink.ebpf_map.networks" {
    at = "0s"
    state = {
      "10.0.0.0/8"     = "01000000696e7465726e616c0000000000000000"
      "172.19.0.0/16"  = "0300000076706e00000000000000000000000000"
      "192.168.0.0/16" = "020000006f666669636500000000000000000000"
    }
  }

  # A reload that renames a network rewrites its entry, and one that drops
  # a network deletes it; the others are not written again.
  given "source.static.networks" {
    at     = "1s"
    update = { "192.168.0.0/16" = { id = 2, name = "head-office" } }
    delete = ["172.19.0.0/16"]
  }
  expect "sink.ebpf_map.networks" {
    at = "1s"
    state = {
      "10.0.0.0/8"     = "01000000696e7465726e616c0000000000000000"
      "192.168.0.0/16" = "02000000686561642d6f66666963650000000000"
    }
    writes = ["+192.168.0.0/16", "-172.19.0.0/16"]
  }
}

test "a network the map cannot hold is skipped, never written in part" {
  given "source.static.networks" {
    at = "0s"
    add = {
      # 15 bytes and the NUL fill string(16).
      "10.0.0.0/8" = { id = 4, name = "exactly-fifteen" }
      # Host bits are masked: the entry is 192.168.0.0/16.
      "192.168.1.7/16" = { id = 2, name = "office" }
      # A name of 16 bytes leaves no room for the NUL; an id beyond a u32;
      # an IPv6 prefix in an ipv4_prefix key.
      "172.19.0.0/16" = { id = 3, name = "remote-workforce" }
      "172.20.0.0/16" = { id = 4294967296, name = "big" }
      "fd00::/8"      = { id = 5, name = "v6" }
    }
  }
  expect "sink.ebpf_map.networks" {
    at = "0s"
    state = {
      "10.0.0.0/8"     = "0400000065786163746c792d6669667465656e00"
      "192.168.0.0/16" = "020000006f666669636500000000000000000000"
    }
  }

  # A network renamed to a name that does not fit leaves the map: its old
  # entry would be a lie.
  given "source.static.networks" {
    at     = "1s"
    update = { "192.168.1.7/16" = { id = 2, name = "office-and-annex" } }
  }
  expect "sink.ebpf_map.networks" {
    at     = "1s"
    keys   = ["10.0.0.0/8"]
    writes = ["-192.168.0.0/16"]
  }
}
