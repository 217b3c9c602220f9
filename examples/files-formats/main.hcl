# No cluster needed: plain data files as sources. A text file of addresses
# (one a line) and a CSV inventory feed one sink. Edit a file and the
# records follow; a malformed row is skipped and logged, and a file that
# stops parsing keeps its last good content.
#
#   pipeline run examples/files-formats
#   pipeline explain 10.0.0.1     # which file and line, and which input

source "files" "blocked" {
  paths  = ["data/blocked.txt"]
  format = "lines" # each line is a record keyed by itself
}

source "files" "hosts" {
  paths  = ["data/hosts.csv"]
  format = "csv" # the first row names the columns
  key    = item.ip
}

transform "extract" "zone_a" {
  input = source.files.hosts
  where = record.value.zone == "a"
  key   = record.key
  value = record.value.name
}

sink "log" "addresses" {
  inputs = [source.files.blocked, transform.extract.zone_a]
}
