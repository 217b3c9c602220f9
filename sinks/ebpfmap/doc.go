// Package ebpfmap implements sink "ebpf_map": it keeps a pinned kernel BPF
// map (hash, lru_hash, lpm_trie, array) equal to its input records. Keys and
// values are encoded from each record by declared encodings (IPs, prefixes,
// integers with a byte order, strings, bytes and C-layout structs), checked
// against the map's sizes when the configuration loads. The engine owns the
// reconcile loop; this package opens, reads and writes the map, with batch
// operations where the kernel has them.
//
// The map survives the process: on exit it stays pinned with its entries,
// and a restart over an equal map writes nothing.
package ebpfmap
