test "every mistake" {
  vars = { grace = 30 } # ERROR: Invalid variable value
  given "source.static.s" { # ERROR: Empty given
    at = "0s"
  }
  given "source.static.s" {
    at  = "-1s" # ERROR: Invalid time
    add = ["k"] # ERROR: Invalid map
  }
  given "source.static.s" {
    at     = "1s"
    delete = [1, null] # ERROR: Invalid list
    bogus  = 1 # ERROR: Unsupported argument
  }
  expect "sink.log.out" { # ERROR: Empty expect
    at = "1s"
  }
  expect "sink.log.out" {
    at    = "2s"
    state = {}
    keys  = [] # ERROR: Conflicting expectations
  }
  expect "sink.log.out" {
    at      = var.later # ERROR: Variables not allowed
    content = 3 # ERROR: Invalid content
    keys    = []
  }
  other {} # ERROR: Unsupported block type
}
