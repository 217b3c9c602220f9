cluster "prod" {
  in_cluster = true
}

leader_election {
  cluster        = cluster.prd # ERROR: Reference to undeclared cluster
  lease_duration = "10s" # ERROR: Invalid leader election timing
  lease_name     = "" # ERROR: Empty lease_name
}

leader_election { # ERROR: Duplicate leader_election block
}

source "static" "s" {
  records = { a = 1 }
}

sink "log" "l" {
  input = source.static.s
}
