package heldindex

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math"
)

// Index is a set of byte strings of one length, each with a reference
// and a mark. The zero Index is not usable; call New.
//
// A slot is head bytes followed by the entry's bytes, padded to a
// multiple of 8: the reference plus one (uint32; 0 marks an empty slot)
// and the mark (uint32). On the flagship's BPF map (4-byte key, 4-byte
// value) a slot is 16 bytes, four to a cache line.
type Index struct {
	seed  maphash.Seed
	key   uint64 // seed of home's word hash, for entries of up to 8 bytes
	width int    // bytes per entry; -1 until the first Put
	size  int    // bytes per slot: head + width, rounded up to 8
	slots []byte // len(slots) = size * (mask+1); nil when empty
	mask  uint64 // slot count - 1 (a power of two)
	n     int
	// homes is MarkMany's scratch (8 bytes per entry of the largest
	// chunk asked about: 32 KB for a BPF map's 4,096); touched keeps what
	// its load sweep reads, so that the compiler keeps the loads.
	homes   []uint64
	touched uint32
}

const (
	head = 8
	// An index grows when more than maxLoadNum/maxLoadDen of its slots
	// would be in use: at 100,000 entries it holds 131,072 slots.
	maxLoadNum, maxLoadDen = 13, 16
	minSlots               = 8
	// MaxRef is the largest reference an Index holds.
	MaxRef = math.MaxUint32 - 1
)

// New returns an empty index with its own hash seed.
func New() *Index {
	seed := maphash.MakeSeed()
	return &Index{seed: seed, key: maphash.Comparable(seed, uint64(0)), width: -1}
}

// Len is the number of entries held.
func (x *Index) Len() int { return x.n }

// Width is the length of every entry held, or -1 before the first Put
// (and again once the index empties).
func (x *Index) Width() int { return x.width }

// Bytes is the memory the index holds (its slots).
func (x *Index) Bytes() int { return len(x.slots) }

// Put adds data with reference ref and mark 0. It reports false, and
// changes nothing, when data is already held, when its length is not the
// index's width (an empty index takes any), or when ref > MaxRef. The
// index keeps its own copy of data.
func (x *Index) Put(data []byte, ref uint32) bool {
	if ref > MaxRef {
		return false
	}
	if x.n == 0 && len(data) != x.width {
		x.setWidth(len(data))
	}
	if len(data) != x.width {
		return false
	}
	x.reserve(1)
	return x.insert(x.home(data), data, ref)
}

// PutMany puts data[i] with reference refs[i] for each i in order, and
// sets ok[i] to what Put would report. It sorts the entries by home slot
// first (a counting sort) and puts them in that order: into an empty
// index it lays them out in one sweep with no probing, as linear probing
// would place them, and into a held one it walks the slots once instead
// of probing them at random. Entries past the end of the shortest of
// data, refs and ok are left out.
func (x *Index) PutMany(data [][]byte, refs []uint32, ok []bool) {
	clear(ok)
	n := min(len(data), len(refs), len(ok))
	data, refs = data[:n], refs[:n]
	if x.n == 0 {
		for i, d := range data {
			if refs[i] <= MaxRef { // the first entry Put would take sets the width
				x.setWidth(len(d))
				break
			}
		}
	}
	w, m := x.width, 0
	for i, d := range data {
		if len(d) == w && refs[i] <= MaxRef {
			m++
		}
	}
	if m == 0 {
		return
	}
	empty := x.n == 0
	x.reserve(m)
	// Sort by home slot, stably (of two equal entries the first is put),
	// copying each entry on the way so that the sweep reads one array.
	start := make([]int32, x.mask+2)
	homes := make([]uint32, len(data))
	for i, d := range data {
		if len(d) == w && refs[i] <= MaxRef {
			homes[i] = uint32(x.home(d))
			start[homes[i]+1]++
		}
	}
	for h := range x.mask + 1 {
		start[h+1] += start[h]
	}
	order := make([]int32, m)
	flat := make([]byte, m*w)
	for i, d := range data {
		if len(d) == w && refs[i] <= MaxRef {
			j := start[homes[i]]
			start[homes[i]]++
			order[j] = int32(i)
			copy(flat[int(j)*w:], d)
		}
	}
	if !empty {
		for j, i := range order {
			ok[i] = x.insert(uint64(homes[i]), flat[j*w:(j+1)*w], refs[i])
		}
		return
	}
	x.layOut(order, homes, flat, refs, ok)
}

// layOut puts into an empty index the entries of order, sorted by home
// slot: each goes to its home slot or the first slot after the entries
// placed before it, which is where linear probing would put it. Equal
// entries share a home slot, so a duplicate is found among the entries
// of its home placed just before it. The entries that run past the last
// slot wrap around through insert.
func (x *Index) layOut(order []int32, homes []uint32, flat []byte, refs []uint32, ok []bool) {
	w := x.width
	next, group := uint64(0), uint64(0) // next free slot; first slot of the current home's entries
	for j, i := range order {
		h, d := uint64(homes[i]), flat[j*w:(j+1)*w]
		if j == 0 || homes[order[j-1]] != homes[i] {
			group = max(h, next)
		}
		pos := max(h, next)
		if pos > x.mask {
			ok[i] = x.insert(h, d, refs[i])
			continue
		}
		dup := false
		for p := group; p < pos && !dup; p++ {
			dup = bytes.Equal(x.slot(p)[head:head+w], d)
		}
		if dup {
			continue
		}
		s := x.slot(pos)
		binary.LittleEndian.PutUint32(s, refs[i]+1)
		copy(s[head:], d)
		x.n++
		ok[i], next = true, pos+1
	}
}

// reserve allocates the slots, or grows them, so that m more entries fit.
func (x *Index) reserve(m int) {
	switch {
	case x.slots == nil:
		x.rehash(slotsFor(m))
	case (x.n+m)*maxLoadDen > int(x.mask+1)*maxLoadNum:
		x.rehash(slotsFor(x.n + m))
	}
}

// insert puts data, of the index's width and whose home slot is h, with
// reference ref, unless it is held; there must be room for it.
func (x *Index) insert(h uint64, data []byte, ref uint32) bool {
	i, found := x.probe(h, data)
	if found {
		return false
	}
	s := x.slot(i)
	binary.LittleEndian.PutUint32(s, ref+1) // an empty slot is all zeros: mark 0
	copy(s[head:], data)
	x.n++
	return true
}

// Ref returns the reference of data, if held.
func (x *Index) Ref(data []byte) (uint32, bool) {
	i, found := x.find(data)
	if !found {
		return 0, false
	}
	return binary.LittleEndian.Uint32(x.slot(i)) - 1, true
}

// Mark sets the mark of data to gen and reports true when data is held
// and its mark was not gen already: the first sighting of an entry in
// the read numbered gen. A new entry's mark is 0, so reads should not be
// numbered 0.
func (x *Index) Mark(data []byte, gen uint32) bool {
	i, found := x.find(data)
	if !found {
		return false
	}
	m := x.slot(i)[4:head]
	if binary.LittleEndian.Uint32(m) == gen {
		return false
	}
	binary.LittleEndian.PutUint32(m, gen)
	return true
}

// MarkMany is Mark for the entries laid end to end in data, width bytes
// each: it sets first[i] to what Mark would report for the i-th, for
// each of the len(first) entries (all false when width is not the
// index's). It looks them up in sweeps: one computes every home slot,
// the next only loads each home slot's first word, so that the cache
// misses of the whole chunk's lookups overlap instead of following one
// another (after a batch read of a BPF map the index's slots are out of
// the caches), and the last probes and marks.
func (x *Index) MarkMany(data []byte, width int, gen uint32, first []bool) {
	clear(first)
	n := len(first)
	if width != x.width || x.slots == nil || len(data) < n*width {
		return
	}
	homes := x.homes[:0]
	for i := range n {
		homes = append(homes, x.home(data[i*width:(i+1)*width]))
	}
	var touched uint32
	for _, h := range homes { // nothing but the loads: as many in flight as the core allows
		touched ^= binary.LittleEndian.Uint32(x.slots[int(h)*x.size:])
	}
	x.touched, x.homes = touched, homes
	for i, h := range homes {
		j, found := x.probe(h, data[i*width:(i+1)*width])
		if !found {
			continue
		}
		if m := x.slot(j)[4:head]; binary.LittleEndian.Uint32(m) != gen {
			binary.LittleEndian.PutUint32(m, gen)
			first[i] = true
		}
	}
}

// Marked reports whether data is held with mark gen.
func (x *Index) Marked(data []byte, gen uint32) bool {
	i, found := x.find(data)
	return found && binary.LittleEndian.Uint32(x.slot(i)[4:]) == gen
}

// AppendUnmarked appends to dst the reference of every entry whose mark
// is not gen (the entries a read numbered gen did not see), in slot
// order, and returns the extended slice.
func (x *Index) AppendUnmarked(dst []uint32, gen uint32) []uint32 {
	if x.slots == nil {
		return dst
	}
	for o := 0; o+x.size <= len(x.slots); o += x.size {
		s := x.slots[o : o+head]
		if r := binary.LittleEndian.Uint32(s); r != 0 && binary.LittleEndian.Uint32(s[4:]) != gen {
			dst = append(dst, r-1)
		}
	}
	return dst
}

// Delete removes data and reports whether it was held. The entries after
// it in its probe run shift back (no tombstones), so lookups never slow
// down with churn; an index that empties frees its slots.
func (x *Index) Delete(data []byte) bool {
	i, found := x.find(data)
	if !found {
		return false
	}
	x.n--
	if x.n == 0 {
		x.slots, x.mask, x.width = nil, 0, -1
		return true
	}
	for j := i; ; {
		j = (j + 1) & x.mask
		s := x.slot(j)
		if binary.LittleEndian.Uint32(s) == 0 {
			break
		}
		// The entry at j may fill the hole at i unless its home slot lies
		// cyclically in (i, j]: it would then be found before the hole.
		k := x.home(s[head : head+x.width])
		if (i <= j && i < k && k <= j) || (i > j && (i < k || k <= j)) {
			continue
		}
		copy(x.slot(i), s)
		i = j
	}
	clear(x.slot(i))
	return true
}

// find returns the slot holding data (found) or, when data has the
// index's width and the index has slots, the empty slot where a Put
// would place it.
func (x *Index) find(data []byte) (uint64, bool) {
	if len(data) != x.width || x.slots == nil {
		return 0, false
	}
	return x.probe(x.home(data), data)
}

// probe is find for data whose home slot is h. Entries of up to 8
// bytes compare as words.
func (x *Index) probe(h uint64, data []byte) (uint64, bool) {
	if x.width > 8 {
		for i := h; ; i = (i + 1) & x.mask {
			s := x.slot(i)
			if binary.LittleEndian.Uint32(s) == 0 {
				return i, false
			}
			if bytes.Equal(s[head:head+x.width], data) {
				return i, true
			}
		}
	}
	v, w := word(data), uint64(x.width)
	size := uint64(x.size)
	for i := h; ; i = (i + 1) & x.mask {
		o := i * size
		s := x.slots[o : o+size : o+size]
		if binary.LittleEndian.Uint32(s) == 0 {
			return i, false
		}
		if word(s[head:head+w]) == v {
			return i, true
		}
	}
}

// home is data's home slot. An entry of up to 8 bytes (the flagship's
// 4-byte key and 4-byte value) is read as one word and mixed with the
// seed by MurmurHash3's finaliser (homeOf): a few instructions, inlined,
// where maphash.Bytes is a call, so that MarkMany's first sweep keeps
// many lookups in flight. Longer entries use maphash.
func (x *Index) home(data []byte) uint64 {
	if len(data) > 8 {
		return maphash.Bytes(x.seed, data) & x.mask
	}
	return x.homeOf(word(data))
}

// homeOf is the home slot of an entry of up to 8 bytes read as word v.
func (x *Index) homeOf(v uint64) uint64 {
	h := v ^ x.key
	h = (h ^ h>>33) * 0xff51afd7ed558ccd
	h = (h ^ h>>33) * 0xc4ceb9fe1a85ec53
	return (h ^ h>>33) & x.mask
}

// word reads up to 8 bytes as a little-endian word, zero-padded.
func word(b []byte) uint64 {
	if len(b) == 8 {
		return binary.LittleEndian.Uint64(b)
	}
	var w [8]byte
	copy(w[:], b)
	return binary.LittleEndian.Uint64(w[:])
}

func (x *Index) slot(i uint64) []byte {
	o := int(i) * x.size
	return x.slots[o : o+x.size : o+x.size]
}

// setWidth sets the entry length of an empty index.
func (x *Index) setWidth(w int) {
	x.width, x.size = w, head+(w+7)&^7
	x.slots, x.mask = nil, 0
}

// rehash moves every entry into a new array of n slots (a power of two
// larger than the entry count).
func (x *Index) rehash(n int) {
	old, size := x.slots, x.size
	x.slots, x.mask = make([]byte, n*size), uint64(n-1)
	for o := 0; o+size <= len(old); o += size {
		s := old[o : o+size]
		if binary.LittleEndian.Uint32(s) == 0 {
			continue
		}
		i := x.home(s[head : head+x.width])
		for binary.LittleEndian.Uint32(x.slot(i)) != 0 {
			i = (i + 1) & x.mask
		}
		copy(x.slot(i), s)
	}
}

// slotsFor is the slot count that holds n entries under the load limit.
func slotsFor(n int) int {
	s := minSlots
	for n*maxLoadDen > s*maxLoadNum {
		s *= 2
	}
	return s
}
