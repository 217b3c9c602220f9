# No cluster needed: pods read from YAML manifests (GitOps, or trying the
# examples), watched for changes, printed as records.

source "files" "pods" {
  paths    = ["manifests/*.yaml"]
  selector = "app=backend"
}

transform "extract" "pod_ips" {
  input = source.files.pods
  where = try(object.status.podIP, "") != ""
  key   = object.status.podIP
  value = { pod = object.metadata.name }
}

sink "log" "ips" {
  input = transform.extract.pod_ips
}
