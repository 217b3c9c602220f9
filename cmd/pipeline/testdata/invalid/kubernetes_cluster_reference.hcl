cluster "prod" {
  in_cluster = true
}

source "kubernetes" "pods" {
  cluster  = cluster.prd # ERROR: Reference to undeclared cluster
  resource = "pods"
}

source "kubernetes" "nodes" {
  cluster  = cluster.staging # ERROR: Reference to undeclared cluster
  resource = "nodes"
}

source "kubernetes" "quoted" {
  cluster  = "prod" # ERROR: Invalid reference
  resource = "services"
}

sink "nats" "pods" {
  input   = source.kubernetes.pods
  url     = "nats://localhost:4222"
  subject = "pods.${record.key}"
}

sink "nats" "nodes" {
  input   = source.kubernetes.nodes
  url     = "nats://localhost:4222"
  subject = "nodes.${record.key}"
}

sink "nats" "services" {
  input   = source.kubernetes.quoted
  url     = "nats://localhost:4222"
  subject = "services.${record.key}"
}
