# Resource metrics: the Ready condition of every cert-manager Certificate as
# a gauge (and, below, every condition as one), kube-state-metrics' custom
# resource state metrics written as a pipeline. One record is one series: a Certificate created adds its
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

# kube-state-metrics' `each` over a list: one series per condition of every
# Certificate (Ready, Issuing, ...), one record per condition made by
# extract, 1 when the condition is True.
transform "extract" "certificate_conditions" {
  input    = source.kubernetes.certificates
  for_each = try(object.status.conditions, [])
  key      = "${object.metadata.namespace}/${object.metadata.name}/${each.value.type}"
  value = {
    namespace = object.metadata.namespace
    name      = object.metadata.name
    condition = each.value.type
    status    = each.value.status
  }
}

sink "prometheus" "certificate_condition" {
  input  = transform.extract.certificate_conditions
  metric = "kube_customresource_certificate_condition"
  help   = "Each condition of each Certificate: 1 when its status is True, else 0."
  labels = {
    namespace = record.value.namespace
    name      = record.value.name
    condition = record.value.condition
  }
  value = record.value.status == "True"
}
