locals {
  records = { for cidr, name in var.networks : cidr => { network = name, env = local.env } }
  env     = upper(var.env)
}
