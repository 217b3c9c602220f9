source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

transform "debounce" "short_max_wait" {
  input    = source.static.nets
  interval = "1s"
  max_wait = "100ms" # ERROR: Invalid max_wait
}

transform "debounce" "zero" {
  input    = source.static.nets
  interval = "0s" # ERROR: Invalid interval
}

transform "debounce" "words" {
  input    = source.static.nets
  interval = "fast" # ERROR: Invalid duration
  max_wait = 5 # ERROR: Invalid duration
}

transform "grace_period" "negative" {
  input = source.static.nets
  delay = "-30s" # ERROR: Invalid duration
}

transform "grace_period" "typo" {
  input = source.static.nets
  dealy = "30s" # ERROR: Unsupported argument
}

sink "log" "a" {
  input = transform.debounce.short_max_wait
}

sink "log" "b" {
  input = transform.debounce.zero
}

sink "log" "c" {
  input = transform.debounce.words
}

sink "log" "d" {
  input = transform.grace_period.negative
}

sink "log" "e" {
  input = transform.grace_period.typo
}
