variable "team" {
  type      = string
  default   = "red"
  sensitive = true
}

source "static" "widgets" {
  records = { "a" = { ready = true } }
}

sink "prometheus" "ready" {
  input  = source.static.widgets
  metric = "widget_ready"
  help   = "Whether the widget is ready."
  labels = { name = record.key, team = var.team } # ERROR: Sensitive value in a series
  value  = record.value.ready
}

sink "prometheus" "ready_again" {
  input  = source.static.widgets
  metric = "widget_ready" # ERROR: Metric family declared twice
  help   = "Whether the widget is ready, again."
  labels = { name = record.key, team = "blue" }
  value  = record.value.ready
}

sink "prometheus" "restarts" {
  input  = source.static.widgets
  metric = "widget_restarts" # ERROR: Metric name against Prometheus conventions
  type   = "counter"
  help   = "Restarts."
  labels = {
    node = record.key # ERROR: Reserved label name
  }
  value = 1
}
