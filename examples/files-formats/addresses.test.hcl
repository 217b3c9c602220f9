# Config tests: `pipeline test examples/files-formats`. The givens stand
# for the files' content: a line is its own key, a CSV row is an object of
# its columns keyed by ip.

test "blocked lines and zone a hosts reach the sink" {
  given "source.files.blocked" {
    at  = "0s"
    add = { "203.0.113.7" = "203.0.113.7" }
  }
  given "source.files.hosts" {
    at = "0s"
    add = {
      "10.0.0.1" = { ip = "10.0.0.1", name = "db-1", zone = "a" }
      "10.0.0.2" = { ip = "10.0.0.2", name = "web-1", zone = "b" }
    }
  }
  expect "sink.log.addresses" {
    at   = "0s"
    keys = ["10.0.0.1", "203.0.113.7"]
  }

  given "source.files.hosts" {
    at     = "1s"
    update = { "10.0.0.2" = { ip = "10.0.0.2", name = "web-1", zone = "a" } }
  }
  expect "sink.log.addresses" {
    at   = "1s"
    keys = ["10.0.0.1", "10.0.0.2", "203.0.113.7"]
  }
}
