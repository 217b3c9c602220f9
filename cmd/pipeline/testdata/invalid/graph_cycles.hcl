# Cycles through transforms. Each loop is reported once, at the input that
# closes it, with the nodes in the order data would flow.
source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}

transform "filter" "a" {
  input = transform.debounce.b # ERROR: Cycle in the graph
  where = record.value.network != ""
}

transform "debounce" "b" {
  input = transform.filter.a
}

transform "grace_period" "x" {
  input = transform.debounce.z # ERROR: Cycle in the graph
}

transform "filter" "y" {
  input = transform.grace_period.x
  where = true
}

transform "debounce" "z" {
  input = transform.filter.y
}

transform "debounce" "self" {
  input = transform.debounce.self # ERROR: Cycle in the graph
}

sink "log" "out" {
  input = source.static.nets
}

# A node downstream of a cycle still has its own attributes checked.
sink "log" "after_cycle" {
  input  = transform.filter.a
  format = "yaml" # ERROR: Invalid value for format
}
