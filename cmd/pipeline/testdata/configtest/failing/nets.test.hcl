test "passes" {
  given "source.static.nets" {
    at  = "0s"
    add = { "192.168.0.0/16" = { id = 2 } }
  }
  given "source.static.nets" {
    at     = "1s"
    delete = ["192.168.0.0/16"]
  }
  expect "sink.ebpf_map.nets" {
    at    = "10999ms"
    state = { "192.168.0.0/16" = "02000000" }
  }
  expect "sink.ebpf_map.nets" {
    at     = "11s"
    keys   = []
    writes = ["-192.168.0.0/16"] # since the last expect of this sink
  }
  expect "sink.log.out" {
    at    = "11s"
    state = {}
  }
}

test "fails" {
  given "source.static.nets" {
    at  = "0s"
    add = { "192.168.0.0/16" = { id = 2, secret = "tok-123456" } }
  }
  expect "sink.ebpf_map.nets" {
    at    = "1s"
    state = { "192.168.0.0/16" = "03000000", "172.16.0.0/12" = "01000000" }
  }
  expect "sink.log.out" {
    at   = "2s"
    keys = []
  }
  given "source.static.nets" {
    at     = "3s"
    update = { "10.0.0.0/8" = { id = 1 } }
  }
}
