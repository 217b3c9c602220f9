# Resource metrics: the Ready condition of every cert-manager Certificate as
# a gauge, kube-state-metrics' custom resource state metric written as a
# pipeline. One record is one series: a Certificate created adds its
# series, a Certificate deleted removes it, and the series are served on
# the instance's /metrics next to the engine's own metrics.
#
#   pipeline run --listen 127.0.0.1:9464 examples/resource-metrics
#   curl -s 127.0.0.1:9464/metrics | grep kube_customresource_certificate_ready
#   pipeline plan examples/resource-metrics      # + shop/web => kube_customresource_certificate_ready{...} 1
#   pipeline explain shop/web                    # the record's series: want, wrote, served
#
# docs/metrics-sink.md sets this beside the kube-state-metrics configuration.

variable "kubeconfig" {
  type    = string
  default = "~/.kube/config"
}

cluster "main" {
  kubeconfig = var.kubeconfig
}

source "kubernetes" "certificates" {
  cluster       = cluster.main
  api_version   = "cert-manager.io/v1"
  kind          = "Certificate"
  ignore_fields = ["{.metadata.managedFields}", "{.spec}"]
}

sink "prometheus" "certificate_ready" {
  input  = source.kubernetes.certificates
  metric = "kube_customresource_certificate_ready"
  help   = "Whether the Certificate's Ready condition is True (1) or not (0: False, Unknown or absent)."
  labels = {
    customresource_group   = "cert-manager.io"
    customresource_kind    = "Certificate"
    customresource_version = "v1"
    namespace              = record.value.metadata.namespace
    name                   = record.value.metadata.name
    condition              = "Ready"
  }
  value = contains([for c in try(record.value.status.conditions, []) : c.status if c.type == "Ready"], "True")
}
