// Package template implements sink "template": it renders one file (a
// proxy's configuration, such as haproxy.cfg) from the whole collection
// of its input with an HCL template, checks the candidate with a command,
// swaps it in atomically and reloads the program that reads it.
//
// The target keeps the records the sink loop gives it (Update and Delete
// only record them) and writes at the end of each round (node.Document),
// once the input has synced. Quiescence is a debounce transform in front,
// not a setting of the sink: one implementation of "quiet for a while, at
// most this late" that config tests run in virtual time. Per-key targets
// (maps, buckets) are sinks ebpfmap and natskv; append-only files are
// sinks log and audit.
package template
