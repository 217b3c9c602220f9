test "names a sink that does not exist" {
  expect "sink.log.nope" {
    at   = "0s"
    keys = []
  }
}
