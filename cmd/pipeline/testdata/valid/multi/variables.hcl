# Files of one directory form one configuration: this one declares the
# variables, locals.hcl the locals, pipeline.hcl the nodes.
variable "env" {
  type    = string
  default = "prod"
}

variable "networks" {
  type = map(string)
  default = {
    "10.0.0.0/8"     = "internal"
    "192.168.0.0/16" = "office"
  }
}
