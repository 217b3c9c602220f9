// Package byteindex is a compact hash set of the entries a target holds,
// found by their encoded bytes (a BPF map entry's key bytes followed by
// its value bytes), with a small caller's reference and a mark per entry.
//
// A full read of a target with 100,000 entries asks, for each entry it
// reads, "is this exactly what I hold, and have I seen it in this read?".
// Asked through a Go map keyed by the canonical key string, that costs
// about four cache misses (the map's group, the key's bytes, the key's
// state, the held bytes). Index keeps the bytes inline in fixed-size
// slots of one array (open addressing, linear probing, backward-shift
// deletion), so that a lookup normally touches one cache line, and again
// in positions laid out in the order of the last full read (Settle), so
// that a read that returns the entries in that order, as a BPF hash map
// does while it is not written, matches them one after another without
// touching the slots. Marks are bits, one per position, of the read in
// progress.
//
// All entries of one index have the same length, set by the first entry
// put into an empty index; Put refuses bytes of another length, and the
// caller keeps such entries elsewhere. An Index is not safe for concurrent
// use. It is not a general map: the sink loop's keyStore holds the per-key
// state, and the index only finds it by reference.
package byteindex
