# A configuration file over 16 MiB is refused before it is read whole.
# run: validate -> 1
# summary: Configuration file too large
# @@repeat 17000000 x@@
