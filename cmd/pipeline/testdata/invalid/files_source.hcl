source "files" "none" {
  paths = [] # ERROR: No paths
}

source "files" "bad_glob" {
  paths         = ["manifests/[a.yaml"] # ERROR: Invalid glob pattern
  poll_interval = "-1s" # ERROR: Invalid duration
}

source "files" "typos" {
  paths    = "manifests/*.yaml" # ERROR: Incorrect attribute value type
  selector = "=web" # ERROR: Invalid label selector
  index_by = ["{.metadata.name}", "{.metadata.namespace"] # ERROR: Invalid index_by path
}

transform "extract" "a" {
  input = source.files.none
  key   = object.metadata.name
}

transform "extract" "b" {
  input = source.files.bad_glob
  key   = object.metadata.name
}

transform "extract" "c" {
  input = source.files.typos
  key   = object.metadata.name
}

sink "log" "a" {
  input = transform.extract.a
}

sink "log" "b" {
  input = transform.extract.b
}

sink "log" "c" {
  input = transform.extract.c
}
