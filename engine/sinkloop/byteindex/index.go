package byteindex

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math"
	"slices"
)

// Index is a set of byte strings of one length, each with a reference
// and a mark: whether the read in progress has seen it. The zero Index
// is not usable; call New. Each entry is kept twice (see the package
// doc): in slots, found by hash, and at a position, in the order of the
// last full read followed by those put since.
//
// A slot is head bytes followed by the entry's bytes, padded to a
// multiple of 8: the entry's position plus one (uint32; 0 marks an empty
// slot) and four unused bytes. On the flagship's BPF map (4-byte key,
// 4-byte value) a slot is 16 bytes, four to a cache line. Positions keep
// the entry's bytes and reference in two arrays and its mark in a bitset
// (12.5 KB for 100,000 entries, so that marking an entry found by hash
// costs no cache miss of its own), so that a read that returns the
// entries in the order of the last one matches them one after another,
// touching memory in order, and marks them without touching the slots.
type Index struct {
	seed  maphash.Seed
	key   uint64 // seed of home's word hash, for entries of up to 8 bytes
	width int    // bytes per entry; -1 until the first Put
	size  int    // bytes per slot: head + width, rounded up to 8
	slots []byte // len(slots) = size * (mask+1); nil when empty
	mask  uint64 // slot count - 1 (a power of two)

	// Positions: data holds width bytes per position, refs the reference
	// (gone for a deleted entry's position) and bit p of marks the mark.
	data  []byte
	refs  []uint32
	marks []uint64
	dead  int // positions of deleted entries

	// The read in progress, numbered gen (the last number Mark and
	// MarkMany were given): cursor is the position after the last entry
	// found, order the positions found in the order found, jumps how
	// many of them were not at the cursor, and seq how many of the last
	// block's were.
	gen    uint32
	cursor int
	order  []uint32
	jumps  int
	seq    int
	// ordered says the positions follow the order of a read (Settle):
	// the next read's first block is matched in order.
	ordered bool

	// homes is MarkMany's scratch, one word per entry of a block.
	// touched is where MarkMany's prefetch sweep stores what it reads:
	// loads whose result went nowhere would be removed as dead code.
	homes   []uint64
	touched uint32
}

// deadSlack is how many dead positions beyond the live entries' number
// Delete lets accumulate before it renumbers: without a read to settle
// the index, churn never grows the positions past twice the entries
// plus this.
const deadSlack = 1024

const (
	head = 8
	// An index grows when more than maxLoadNum/maxLoadDen of its slots
	// would be in use: at 100,000 entries it holds 131,072 slots.
	maxLoadNum, maxLoadDen = 13, 16
	minSlots               = 8
	// MaxRef is the largest reference an Index holds.
	MaxRef = math.MaxUint32 - 1
	gone   = math.MaxUint32 // the reference of a deleted entry's position
	// lookahead is how many positions past the cursor MarkMany tries
	// before it probes the slots: a deleted entry, or an entry the
	// target moved within its bucket, costs no probe.
	lookahead = 4
)

// New returns an empty index with its own hash seed.
func New() *Index {
	seed := maphash.MakeSeed()
	return &Index{seed: seed, key: maphash.Comparable(seed, uint64(0)), width: -1}
}

// Len is the number of entries held.
func (x *Index) Len() int { return len(x.refs) - x.dead }

// Put adds data with reference ref, unmarked. It reports false, and
// changes nothing, when data is already held, when its length is not the
// index's width (an empty index takes any), or when ref > MaxRef. The
// index keeps its own copy of data.
func (x *Index) Put(data []byte, ref uint32) bool {
	if ref > MaxRef {
		return false
	}
	if x.Len() == 0 && len(data) != x.width {
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
	if x.Len() == 0 {
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
	empty := x.Len() == 0
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
		x.fill(pos, d, refs[i])
		ok[i], next = true, pos+1
	}
}

// reserve allocates the slots and positions, or grows them, so that m
// more entries fit: the positions to the entries' count exactly when
// they are put at once, else doubling.
func (x *Index) reserve(m int) {
	if p := len(x.refs); cap(x.refs)-p < m {
		c := p + max(m, min(p, 1<<20))
		x.data = slices.Grow(x.data, c*x.width-len(x.data))
		x.refs, x.marks = slices.Grow(x.refs, c-p), slices.Grow(x.marks, (c+63)/64-len(x.marks))
	}
	switch {
	case x.slots == nil:
		x.rehash(slotsFor(m))
	case (x.Len()+m)*maxLoadDen > int(x.mask+1)*maxLoadNum:
		x.rehash(slotsFor(x.Len() + m))
	}
}

// insert puts data, of the index's width and whose home slot is h, with
// reference ref, unless it is held; there must be room for it.
func (x *Index) insert(h uint64, data []byte, ref uint32) bool {
	i, found := x.probe(h, data)
	if found {
		return false
	}
	x.fill(i, data, ref)
	return true
}

// fill puts data with reference ref into empty slot i and a new position.
func (x *Index) fill(i uint64, data []byte, ref uint32) {
	p := len(x.refs)
	x.data, x.refs = append(x.data, data...), append(x.refs, ref)
	if p%64 == 0 {
		x.marks = append(x.marks, 0)
	}
	s := x.slot(i)
	binary.LittleEndian.PutUint32(s, uint32(p)+1)
	copy(s[head:], data)
}

// pos is the position of the entry in slot i, which must be in use.
func (x *Index) pos(i uint64) int {
	return int(binary.LittleEndian.Uint32(x.slots[int(i)*x.size:]) - 1)
}

// Ref returns the reference of data, if held.
func (x *Index) Ref(data []byte) (uint32, bool) {
	i, found := x.find(data)
	if !found {
		return 0, false
	}
	return x.refs[x.pos(i)], true
}

// Mark marks data as seen in the read numbered gen and reports true
// when data is held and was not marked already: the first sighting of
// an entry in that read. A number other than the last one given starts
// a new read, with every entry unmarked.
func (x *Index) Mark(data []byte, gen uint32) bool {
	x.begin(gen)
	i, found := x.find(data)
	return found && x.mark(x.pos(i))
}

// begin starts the read numbered gen unless it is the one in progress.
func (x *Index) begin(gen uint32) {
	if gen == x.gen {
		return
	}
	clear(x.marks)
	x.gen, x.cursor, x.order, x.jumps, x.seq = gen, 0, x.order[:0], 0, 0
	if x.ordered {
		x.seq = math.MaxInt / 2 // the first block is matched in order
	}
}

func (x *Index) marked(p int) bool { return x.marks[p/64]&(1<<(p%64)) != 0 }

// mark marks position p and reports whether it was not marked already.
func (x *Index) mark(p int) bool {
	if x.marked(p) {
		return false
	}
	x.marks[p/64] |= 1 << (p % 64)
	return true
}

// MarkMany is Mark for the entries laid end to end in data, width bytes
// each: it sets first[i] to what Mark would report for the i-th, for
// each of the len(first) entries (all false when width is not the
// index's). Calls with the same gen are taken as one read, chunk after
// chunk.
//
// The chunk is taken a block of 4,096 entries at a time. A block is
// matched in order (markInOrder) when most of the last block's entries
// were found at the position after the one before, or, for a read's
// first block, when the positions follow the last read
// (Settle): each entry is looked for at the position after the last one
// found (and a few past it), so that a read that returns the entries in
// the order the last one did, as a BPF hash map does while it is not
// written, touches the positions one after another and not the slots.
// Any other block is looked up by hash in sweeps: one computes every
// home slot, the next only loads each home slot's first word, so that
// the cache misses of the whole block's lookups overlap instead of
// following one another (after a batch read of a BPF map the slots are
// out of the caches), and the last probes.
func (x *Index) MarkMany(data []byte, width int, gen uint32, first []bool) {
	clear(first)
	x.begin(gen)
	n := len(first)
	if width != x.width || x.slots == nil || len(data) < n*width {
		return
	}
	for i := 0; i < n; i += block {
		j := min(i+block, n)
		x.markBlock(data[i*width:j*width], first[i:j])
	}
}

// block is the most entries MarkMany looks up in one go: a whole map
// read at once is looked up a block at a time, so that one block's
// lines are still in the caches when its probes come after its loads.
const block = 4096

// markBlock is MarkMany for a block of entries.
func (x *Index) markBlock(data []byte, first []bool) {
	n, w := len(first), x.width
	if 2*x.seq >= n {
		x.markInOrder(data, first)
		return
	}
	x.seq = 0
	homes := x.homes[:0]
	for i := range n {
		homes = append(homes, x.home(data[i*w:(i+1)*w]))
	}
	var touched uint32
	for _, h := range homes { // nothing but the loads: as many in flight as the core allows
		touched ^= binary.LittleEndian.Uint32(x.slots[int(h)*x.size:])
	}
	x.touched, x.homes = touched, homes
	for i, h := range homes {
		s, found := x.probe(h, data[i*w:(i+1)*w])
		if !found {
			continue
		}
		p := x.pos(s)
		if p == x.cursor {
			x.seq++
		}
		x.markAt(p, first, i, true)
	}
}

// markInOrder is MarkMany for a block expected in position order: each
// entry is looked for near the cursor, and probed for by hash only if
// not there. An entry found by hash is out of order, and the cursor
// stays where the entries in order left it.
func (x *Index) markInOrder(data []byte, first []bool) {
	w := x.width
	x.seq = 0
	for i := range first {
		d := data[i*w : (i+1)*w]
		if p, ok := x.near(d); ok {
			x.seq++
			x.markAt(p, first, i, true)
			continue
		}
		if s, found := x.find(d); found {
			x.markAt(x.pos(s), first, i, false)
		}
	}
}

// near returns the position of d if it is held at the cursor or a few
// positions past it.
func (x *Index) near(d []byte) (int, bool) {
	w := x.width
	for p := x.cursor; p < min(x.cursor+lookahead, len(x.refs)); p++ {
		if x.refs[p] != gone && bytes.Equal(x.data[p*w:(p+1)*w], d) {
			return p, true
		}
	}
	return 0, false
}

// markAt marks the entry at position p, the i-th of a block, as
// seen, and, if move, moves the cursor past it.
func (x *Index) markAt(p int, first []bool, i int, move bool) {
	if p != x.cursor {
		x.jumps++
	}
	if move {
		x.cursor = p + 1
	}
	if x.mark(p) {
		first[i] = true
		x.order = append(x.order, uint32(p))
	}
}

// Marked reports whether data is held and marked in the read numbered
// gen, the one in progress.
func (x *Index) Marked(data []byte, gen uint32) bool {
	i, found := x.find(data)
	return found && gen == x.gen && x.marked(x.pos(i))
}

// AppendUnmarked appends to dst the reference of every entry not marked
// in the read numbered gen (all of them unless gen is the read in
// progress), in position order, and returns the extended slice.
func (x *Index) AppendUnmarked(dst []uint32, gen uint32) []uint32 {
	for p, r := range x.refs {
		if r != gone && (gen != x.gen || !x.marked(p)) {
			dst = append(dst, r)
		}
	}
	return dst
}

// Settle lays the positions out in the order the last read found the
// entries (MarkMany), followed by the others, and drops deleted
// entries' positions, when the read found many entries out of order or
// many positions are dead; it reports whether it did. A caller settles
// the index when it has nothing else to do, after a full read (its cost
// is in docs/data-path.md §4), and the next read that returns the
// entries in the same order matches them in order.
func (x *Index) Settle() bool {
	if x.jumps*64 <= x.Len() && x.dead*8 <= x.Len() {
		return false
	}
	x.renumber(x.order)
	x.ordered, x.jumps = true, 0
	return true
}

// Ordered reports whether the positions follow the order of a read
// (Settle laid them out since the index was last empty).
func (x *Index) Ordered() bool { return x.ordered }

// renumber gives the live entries new positions: those of first in its
// order, then the others in position order. It keeps marks, and maps
// the read in progress (order, cursor) to the new positions.
func (x *Index) renumber(first []uint32) {
	w, old := x.width, len(x.refs)
	to := make([]uint32, old) // new position + 1; 0 for a deleted entry's
	data := make([]byte, 0, x.Len()*w)
	refs, marks := make([]uint32, 0, x.Len()), make([]uint64, (x.Len()+63)/64)
	place := func(p int) {
		if x.refs[p] == gone || to[p] != 0 {
			return
		}
		q := len(refs)
		to[p] = uint32(q) + 1
		data = append(data, x.data[p*w:(p+1)*w]...)
		refs = append(refs, x.refs[p])
		if x.marked(p) {
			marks[q/64] |= 1 << (q % 64)
		}
	}
	for _, p := range first {
		if int(p) < old {
			place(int(p))
		}
	}
	for p := range old {
		place(p)
	}
	for o := 0; o+x.size <= len(x.slots); o += x.size {
		if p := binary.LittleEndian.Uint32(x.slots[o:]); p != 0 {
			binary.LittleEndian.PutUint32(x.slots[o:], to[p-1])
		}
	}
	kept := x.order[:0]
	for _, p := range x.order {
		if int(p) < old && to[p] != 0 {
			kept = append(kept, to[p]-1)
		}
	}
	cursor := len(refs)
	for p := x.cursor; p < old; p++ {
		if to[p] != 0 {
			cursor = int(to[p] - 1)
			break
		}
	}
	x.data, x.refs, x.marks, x.dead, x.order, x.cursor = data, refs, marks, 0, kept, cursor
}

// Delete removes data and reports whether it was held. The entries after
// it in its probe run shift back (no tombstones), so lookups never slow
// down with churn; its position stays, marked gone, until the positions
// are renumbered (Settle, or once dead positions outnumber the live
// ones); an index that empties frees its memory.
func (x *Index) Delete(data []byte) bool {
	i, found := x.find(data)
	if !found {
		return false
	}
	p := x.pos(i)
	x.refs[p] = gone
	x.dead++
	if x.Len() == 0 {
		x.setWidth(-1) // the next Put sets it again
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
	if x.dead > x.Len()+deadSlack {
		x.renumber(nil) // bounded without reads: churn never grows the positions past twice the entries
	}
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
// where maphash.Bytes is a call, so that MarkMany's hash sweep keeps
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

// setWidth empties the index and sets its entry length (-1: none yet).
func (x *Index) setWidth(w int) {
	*x = Index{seed: x.seed, key: x.key, width: w, size: head + (w+7)&^7, gen: x.gen, homes: x.homes[:0]}
}

// rehash moves every entry into a new array of n slots (a power of two
// larger than the entry count); positions stay.
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
