# Scale past one machine, node side: read the hub's bucket, drain removals,
# program this node's allow-list. No API server watch per node; a restarted
# agent over an unchanged bucket writes nothing to its map.

source "nats_kv" "pod_ips" {
  url        = "nats://nats.pipeline.svc:4222"
  bucket     = "pod-ips"
  key_prefix = "v1."
}

transform "grace_period" "drain" {
  input = source.nats_kv.pod_ips
  delay = "30s"
}

sink "ebpf_map" "allowed" {
  input = transform.grace_period.drain
  pin   = "/sys/fs/bpf/pipeline/allowed"
  key {
    type = "ip"
  }
  value {
    type = "u32"
    from = 1
  }
}
