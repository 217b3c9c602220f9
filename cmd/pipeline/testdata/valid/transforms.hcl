# A chain through every transform type: extract reshapes records, filter
# keeps some, debounce batches, grace_period delays removals.
variable "zone" {
  type    = string
  default = "eu"
}

source "static" "hosts" {
  records = {
    web = { ips = ["10.0.0.7", "10.0.0.8"], role = "frontend" }
    db  = { ips = ["10.0.1.9"], role = "backend" }
  }
}

transform "extract" "ips" {
  input    = source.static.hosts
  where    = object.role != ""
  for_each = object.ips
  key      = "${each.value}/32"
  value    = { role = object.role, zone = var.zone }
}

transform "filter" "frontend" {
  input = transform.extract.ips
  where = record.value.role == "frontend" && can(cidrhost(record.key, 0))
}

transform "debounce" "batch" {
  input    = transform.filter.frontend
  interval = "50ms"
  max_wait = "1s"
}

transform "grace_period" "drain" {
  input = transform.debounce.batch
  delay = "30s"
}

sink "nats_kv" "allowed" {
  input  = transform.grace_period.drain
  url    = "nats://localhost:4222"
  bucket = "allowed-${var.zone}"
}
