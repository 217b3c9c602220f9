#@@repeat 1000000 ,c@@
# A CSV file whose header names a million columns (this configuration,
# read as CSV): the header is refused before any row becomes a record of a
# million attributes, and the source says why (plan: synced with no
# records, naming the file and line).
# run: plan -> 0
# run: validate --check-files -> 0
# summary: more than the limit of 16384
source "files" "self" {
  paths  = ["*.hcl"]
  format = "csv"
  key    = item.x
}

sink "log" "out" {
  input = source.files.self
}
