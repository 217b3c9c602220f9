source "statik" "nets" { # ERROR: Unknown source type
  records = {}
}

source "kubernetes_pods" "pods" { # ERROR: Unknown source type
}

transform "passthrough" "p" { # ERROR: Unknown transform type
  input = source.statik.nets
}

sink "lgo" "out" { # ERROR: Unknown sink type
  input = source.statik.nets
}
