# Scale past one machine, hub side: one leader-elected instance watches the
# API server and mirrors pod IPs into a NATS key-value bucket. Every node runs
# examples/agent. A single-replica hub can serve the bucket itself: replace
# url with an embedded { listen = "0.0.0.0:4222", store_dir = "..." } block.

source "kubernetes" "pods" {
  resource = "pods"
  selector = "app=backend"
  # No ignore_fields needed: the source decodes only the fields the
  # expressions below read (see `pipeline graph`).
}

transform "extract" "pod_ips" {
  input    = source.kubernetes.pods
  where    = try(object.status.phase, "") == "Running"
  for_each = try(object.status.podIPs, [])
  key      = each.value.ip
  value    = { pod = object.metadata.name, namespace = object.metadata.namespace, node = try(object.spec.nodeName, "") }
}

sink "nats_kv" "pod_ips" {
  input      = transform.extract.pod_ips
  url        = "nats://nats.pipeline.svc:4222"
  bucket     = "pod-ips"
  key_prefix = "v1."
}

# Two replicas run this file (`pipeline manifests --mode hub`); both keep the
# pod list synced, only the holder of the Lease writes to the bucket.
leader_election {
  lease_name = "pipeline-hub"
}
