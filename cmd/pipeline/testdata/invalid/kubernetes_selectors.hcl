source "kubernetes" "bad_string" {
  resource = "pods"
  selector = "app in prod" # ERROR: Invalid label selector
}

source "kubernetes" "blocks" {
  resource = "pods"
  selector {
    key      = "env"
    operator = "within" # ERROR: Invalid value for operator
    values   = ["prod"]
  }
  selector {
    key      = "tier"
    operator = "exists"
    values   = ["web"] # ERROR: Invalid label selector requirement
  }
  selector { # ERROR: Invalid label selector requirement
    key      = "app"
    operator = "in"
  }
  selector { # ERROR: Invalid label selector requirement
    key      = "zone"
    operator = "="
    values   = ["a", "b"]
  }
  selector {
    key      = "bad key!" # ERROR: Invalid label selector requirement
    operator = "exists"
  }
}

source "kubernetes" "both" {
  resource = "pods"
  selector = "app=web"
  selector { # ERROR: Conflicting label selectors
    key      = "env"
    operator = "!exists"
  }
}

source "kubernetes" "fields" {
  resource       = "pods"
  field_selector = "status.phase in (Running)" # ERROR: Invalid field selector
}

sink "log" "a" {
  input = source.kubernetes.bad_string
}

sink "log" "b" {
  input = source.kubernetes.blocks
}

sink "log" "c" {
  input = source.kubernetes.both
}

sink "log" "d" {
  input = source.kubernetes.fields
}
