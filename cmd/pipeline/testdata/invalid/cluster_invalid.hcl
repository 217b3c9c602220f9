cluster "two_modes" { # ERROR: Invalid cluster connection
  kubeconfig = "~/.kube/config"
  in_cluster = true
}

cluster "no_mode" { # ERROR: Invalid cluster connection
  context = "prod"
}

cluster "plain_http" {
  endpoint   = "http://10.0.0.1:6443" # ERROR: Insecure endpoint
  token_file = "token"
}

cluster "no_host" {
  endpoint = "https://" # ERROR: Invalid endpoint
}

cluster "both_tokens" {
  endpoint   = "https://10.0.0.1:6443"
  token_file = "/var/run/token"
  token      = "secret" # ERROR: Conflicting credentials
}

cluster "token_without_endpoint" { # ERROR: Credentials without endpoint
  in_cluster = true
  token_file = "/var/run/token"
}

cluster "typo" {
  in_cluster = true
  kubecfg    = "x" # ERROR: Unsupported argument
  qps        = "fast" # ERROR: Incorrect attribute value type
}
