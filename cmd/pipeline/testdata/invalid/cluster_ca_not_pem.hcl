cluster "prod" {
  endpoint   = "https://10.0.0.1:6443"
  ca_cert    = "cluster_ca_not_pem.hcl" # ERROR: Invalid CA certificate
  token_file = "/var/run/secrets/token"
}
