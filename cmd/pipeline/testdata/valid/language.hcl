# Every feature of the configuration language in one file. TestValidCorpus
# loads it with -var and PIPELINE_VAR_ settings (schema.Options) and checks
# the records of source.static.values.

# Variables of every type. Overridden by the test:
#   -var region=eu-west, -var enabled=true, -var 'zones=["a", "b", "c"]',
#   PIPELINE_VAR_port=4333, PIPELINE_VAR_from_env=hello.
variable "region" {
  type        = string
  default     = "us-east"
  description = "Region the pipeline runs in."
}

variable "port" {
  type    = number
  default = 4222
}

variable "enabled" {
  type    = bool
  default = false
}

variable "zones" {
  type    = list(string)
  default = ["a"]
}

variable "labels" {
  type    = map(string)
  default = { team = "net", tier = "edge" }
}

variable "limits" {
  type    = object({ max = number, unit = string })
  default = { max = 10, unit = "MiB" }
}

variable "ports" {
  type    = set(number)
  default = [443, 80, 443]
}

variable "pair" {
  type    = tuple([string, number])
  default = ["x", 1]
}

variable "anything" {
  default = { nested = [1, 2] }
}

variable "token" {
  type      = string
  sensitive = true
  default   = "s3cr3t"
}

variable "from_env" {
  type = string
}

# Locals may depend on locals, in any order.
locals {
  subnet    = cidrsubnet(local.base, 8, 2)
  base      = "10.0.0.0/8"
  gateway   = cidrhost(local.subnet, 1)
  last_host = cidrhost(local.subnet, -2)
  v6_subnet = cidrsubnet("fd00::/8", 56, 1)
  name      = lower("${var.region}-POD")
  shout     = upper(local.name)
  csv       = join(",", var.zones)
  parts     = split(",", local.csv)
  greeting  = format("%s has %d zones", var.region, length(var.zones))
  doc       = jsonencode({ region = var.region, port = var.port })
  decoded   = jsondecode(local.doc)
  home      = env("PIPELINE_TEST_HOME", "/nowhere")
  unset     = env("PIPELINE_TEST_UNSET")
  motd      = trimspace(file("data/motd.txt"))
  state     = var.enabled ? "on" : "off"
  doubled   = [for z in var.zones : "${z}${z}"]
  index     = { for i, z in var.zones : z => i }
  listing   = "%{for z in var.zones}[${z}]%{endfor}"
  banner    = <<-EOT
    region ${var.region}
    zones  ${local.csv}
  EOT
}

source "static" "values" {
  records = {
    region    = var.region
    port      = var.port
    enabled   = var.enabled
    zones     = var.zones
    labels    = var.labels
    limits    = var.limits
    ports     = var.ports
    pair      = var.pair
    anything  = var.anything
    from_env  = var.from_env
    subnet    = local.subnet
    gateway   = local.gateway
    last_host = local.last_host
    v6_subnet = local.v6_subnet
    name      = local.name
    shout     = local.shout
    parts     = local.parts
    greeting  = local.greeting
    doc       = local.doc
    decoded   = local.decoded
    home      = local.home
    unset     = local.unset
    motd      = local.motd
    state     = local.state
    doubled   = local.doubled
    index     = local.index
    listing   = local.listing
    banner    = local.banner
  }
}

cluster "local" {
  kubeconfig = "data/kubeconfig"
  context    = "kind-${local.name}"
}

cluster "inside" {
  in_cluster = true
}

cluster "remote" {
  endpoint   = "https://10.0.0.1:6443"
  ca_cert    = "data/ca.pem"
  token_file = "data/token"
  qps        = 20
  burst      = 40
}

sink "log" "out" {
  input  = source.static.values
  format = "json"
  path   = "${local.name}.log"
  prune  = false
  resync = "0s"
}

sink "audit" "trail" {
  input          = source.static.values
  path           = "/var/log/pipeline/${local.name}.jsonl"
  max_size       = "${var.limits.max}${var.limits.unit}"
  max_files      = 3
  include_values = !var.enabled
}

sink "nats" "events" {
  input     = source.static.values
  url       = format("nats://localhost:%d", var.port)
  subject   = "${local.name}.${replace(record.key, ".", "_")}"
  jetstream = var.enabled
  token     = var.token
}

sink "nats_kv" "state" {
  input      = source.static.values
  url        = "nats://localhost:${var.port}"
  bucket     = local.name
  key_prefix = "${var.region}/"
  history    = 1 + 2
  storage    = "memory"
}
