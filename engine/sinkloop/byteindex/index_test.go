package byteindex

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// entry is what the model (a Go map) holds per byte string: its
// reference and the number of the last read that marked it.
type entry struct {
	ref  uint32
	mark uint32
}

// check compares x with the model and checks the table's invariants: the
// count, every entry found by lookup, and every entry reachable from its
// home slot without crossing an empty slot (what backward-shift deletion
// must keep).
func check(t *testing.T, x *Index, model map[string]entry) {
	t.Helper()
	if x.Len() != len(model) {
		t.Fatalf("Len = %d, model holds %d", x.Len(), len(model))
	}
	for d, e := range model {
		if r, ok := x.Ref([]byte(d)); !ok || r != e.ref {
			t.Fatalf("Ref(%x) = %d, %v; want %d", d, r, ok, e.ref)
		}
		// Marks are those of the read in progress, the last one numbered.
		if got, want := x.Marked([]byte(d), x.gen), x.gen != 0 && e.mark == x.gen; got != want {
			t.Fatalf("Marked(%x, %d) = %v; want %v", d, x.gen, got, want)
		}
	}
	used := 0
	for i := uint64(0); i <= x.mask && x.slots != nil; i++ {
		s := x.slot(i)
		if binary.LittleEndian.Uint32(s) == 0 {
			if slices.ContainsFunc(s, func(b byte) bool { return b != 0 }) {
				t.Fatalf("empty slot %d holds bytes %x", i, s)
			}
			continue
		}
		used++
		for j := x.home(s[head : head+x.width]); j != i; j = (j + 1) & x.mask {
			if binary.LittleEndian.Uint32(x.slot(j)) == 0 {
				t.Fatalf("slot %d is unreachable: empty slot %d on its probe run", i, j)
			}
		}
	}
	if used != len(model) {
		t.Fatalf("%d slots in use, model holds %d", used, len(model))
	}
	if len(model) > 0 && used*maxLoadDen > len(x.slots)/x.size*maxLoadNum {
		t.Fatalf("%d entries in %d slots: over the load limit", used, len(x.slots)/x.size)
	}
	// Positions: each slot names a live position holding its bytes, no
	// two slots the same one, and the others are dead.
	if len(x.data) != len(x.refs)*max(x.width, 0) || len(x.marks) != (len(x.refs)+63)/64 {
		t.Fatalf("positions: %d bytes, %d refs, %d marks", len(x.data), len(x.refs), len(x.marks))
	}
	named := make([]bool, len(x.refs))
	for i := uint64(0); i <= x.mask && x.slots != nil; i++ {
		if binary.LittleEndian.Uint32(x.slot(i)) == 0 {
			continue
		}
		p := x.pos(i)
		if p < 0 || p >= len(x.refs) || named[p] || x.refs[p] == gone || string(x.data[p*x.width:(p+1)*x.width]) != string(x.slot(i)[head:head+x.width]) {
			t.Fatalf("slot %d names position %d of %d (named before: %v)", i, p, len(x.refs), p >= 0 && p < len(named) && named[p])
		}
		named[p] = true
	}
	dead := 0
	for p, r := range x.refs {
		if r == gone {
			dead++
		} else if !named[p] {
			t.Fatalf("live position %d is in no slot", p)
		}
	}
	if dead != x.dead {
		t.Fatalf("%d dead positions, the index counts %d", dead, x.dead)
	}
}

// heldInOrder returns the entries held, in position order, as a read
// that finds the map unchanged returns them, with a few changes a
// target makes between reads: an entry gone, two neighbours swapped, an
// entry not held.
func heldInOrder(rng *rand.Rand, x *Index, width, space int) []byte {
	var out [][]byte
	for p, r := range x.refs {
		if r != gone {
			out = append(out, x.data[p*width:(p+1)*width])
		}
	}
	for range rng.IntN(3) {
		if len(out) > 1 {
			i := rng.IntN(len(out) - 1)
			switch rng.IntN(3) {
			case 0:
				out = slices.Delete(out, i, i+1)
			case 1:
				out[i], out[i+1] = out[i+1], out[i]
			default:
				out = slices.Insert(out, i, randomData(rng, width, space))
			}
		}
	}
	return slices.Concat(out...)
}

func TestBasics(t *testing.T) {
	x := New()
	if x.Width() != -1 || x.Len() != 0 || x.Bytes() != 0 {
		t.Fatalf("new index: width %d, len %d, bytes %d", x.Width(), x.Len(), x.Bytes())
	}
	a, b := []byte("key1val1"), []byte("key2val2")
	if x.Mark(a, 1) || x.Marked(a, 0) || x.Delete(a) {
		t.Fatal("an empty index holds nothing")
	}
	if _, ok := x.Ref(a); ok {
		t.Fatal("Ref on an empty index")
	}
	if !x.Put(a, 7) || x.Width() != 8 {
		t.Fatalf("Put into an empty index sets the width: %d", x.Width())
	}
	if x.Put(a, 9) {
		t.Fatal("Put of held bytes must refuse")
	}
	if r, _ := x.Ref(a); r != 7 {
		t.Fatalf("a refused Put changed the reference to %d", r)
	}
	if x.Put([]byte("short"), 1) || x.Put([]byte("longer bytes"), 1) || x.Put(nil, 1) {
		t.Fatal("Put of another length must refuse")
	}
	if x.Put(b, MaxRef+1) {
		t.Fatal("Put of a reference above MaxRef must refuse")
	}
	if !x.Put(b, MaxRef) {
		t.Fatal("Put of MaxRef")
	}
	if r, ok := x.Ref(b); !ok || r != MaxRef {
		t.Fatalf("Ref = %d, %v; want MaxRef", r, ok)
	}
	if x.Marked(a, 1) || x.Marked(a, 3) {
		t.Fatal("a new entry is unmarked")
	}
	if !x.Mark(a, 3) || x.Mark(a, 3) || !x.Marked(a, 3) {
		t.Fatal("Mark reports the first sighting in a read only")
	}
	if got := x.AppendUnmarked(nil, 3); !cmp.Equal(got, []uint32{MaxRef}) {
		t.Fatalf("AppendUnmarked(3) = %v; want only b's reference", got)
	}
	if got := x.AppendUnmarked(nil, 4); len(got) != 2 {
		t.Fatalf("AppendUnmarked(4) before read 4 = %v; want both references", got)
	}
	if !x.Mark(b, 4) || x.Marked(a, 3) || x.Marked(a, 4) || !x.Marked(b, 4) {
		t.Fatal("a new read starts with every entry unmarked")
	}
	if x.Mark([]byte("key3val3"), 3) || x.Mark([]byte("k"), 3) {
		t.Fatal("Mark of bytes not held")
	}
	if !x.Delete(a) || x.Delete(a) || x.Len() != 1 {
		t.Fatal("Delete reports whether the bytes were held")
	}
	if !x.Delete(b) || x.Width() != -1 || x.Bytes() != 0 {
		t.Fatalf("an index that empties frees its slots and forgets its width: width %d, bytes %d", x.Width(), x.Bytes())
	}
	if !x.Put([]byte("abc"), 1) || x.Width() != 3 {
		t.Fatal("an emptied index takes a new width")
	}
	ok := make([]bool, 1)
	x.PutMany([][]byte{[]byte("def"), []byte("ghi")}, []uint32{2, 3, 4}, ok)
	if !ok[0] || x.Len() != 2 {
		t.Fatalf("PutMany takes the entries all its slices reach: ok %v, len %d", ok, x.Len())
	}
	y := New()
	y.PutMany([][]byte{[]byte("toolong"), []byte("ab")}, []uint32{MaxRef + 1, 5}, make([]bool, 2))
	if y.Width() != 2 || y.Len() != 1 {
		t.Fatalf("the first entry PutMany takes sets the width: width %d, len %d", y.Width(), y.Len())
	}
}

func TestWidths(t *testing.T) {
	for _, w := range []int{0, 1, 3, 7, 8, 9, 13, 64} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			x := New()
			model := map[string]entry{}
			n := 300
			if w == 0 {
				n = 1 // one empty string
			} else if w == 1 {
				n = 256
			}
			for i := range n {
				d := make([]byte, w)
				for j := range d {
					d[j] = byte(i >> (8 * (j % 4)))
				}
				if w > 4 {
					d[w-1] = byte(i * 7)
				}
				if _, dup := model[string(d)]; dup {
					continue
				}
				if !x.Put(d, uint32(i)) {
					t.Fatalf("Put %x failed", d)
				}
				model[string(d)] = entry{ref: uint32(i)}
			}
			if x.size%8 != 0 || x.size < head+w {
				t.Fatalf("slot size %d for width %d", x.size, w)
			}
			check(t, x, model)
			if w == 0 && x.Put([]byte{}, 2) {
				t.Fatal("a second empty string is a duplicate")
			}
			for d := range model {
				if !x.Delete([]byte(d)) {
					t.Fatalf("Delete %x", d)
				}
				delete(model, d)
				if len(model)%50 == 0 {
					check(t, x, model)
				}
			}
			check(t, x, model)
		})
	}
}

// TestGrow checks the index's size: PutMany makes room for its entries
// at once, and the slots double as Puts pass the load limit.
func TestGrow(t *testing.T) {
	const n = 100_000
	data, refs := make([][]byte, n), make([]uint32, n)
	for i := range data {
		data[i], refs[i] = binary.LittleEndian.AppendUint64(nil, uint64(i)<<8|0xff), uint32(i)
	}
	x := New()
	x.PutMany(data, refs, make([]bool, n))
	size := func(entries, slots, positions, slack int) {
		t.Helper()
		about := func(c, want int) bool { return c >= want && c <= want+want/slack } // allocation rounds up
		if len(x.slots) != slots*16 || !about(cap(x.refs), positions) || cap(x.marks) < (positions+63)/64 || cap(x.marks) > (positions+63)/64*3/2 || !about(cap(x.data), positions*8) {
			t.Fatalf("%d entries: %d slots, room for %d, %d, %d positions; want %d slots, %d positions",
				entries, len(x.slots)/16, cap(x.refs), 64*cap(x.marks), cap(x.data)/8, slots, positions)
		}
		if got, want := x.Bytes(), len(x.slots)+cap(x.data)+4*cap(x.refs)+8*cap(x.marks); got != want {
			t.Fatalf("%d entries: Bytes() = %d; want %d", entries, got, want)
		}
	}
	size(n, 131072, n, 64) // exactly, but for the allocator's size classes
	for i := range 6_496 { // 106,496 entries are the most 131,072 slots hold
		x.Put(binary.LittleEndian.AppendUint64(nil, uint64(i)<<8|0xfe), 1)
	}
	size(n+6_496, 131072, 2*n, 4) // doubled, and the runtime's growth on top
	x.Put([]byte{1, 2, 3, 4, 5, 6, 7, 8}, 2)
	size(n+6_497, 262144, 2*n, 4)
}

// TestDifferential runs random operations on an index and on a Go map
// and compares every answer, with few distinct byte strings so that
// entries collide, runs wrap around the table's end and deletions shift.
func TestDifferential(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, seed))
			x := New()
			model := map[string]entry{}
			width := []int{1, 4, 8, 12}[seed%4]
			space := []int{16, 200, 2000}[seed%3]
			gen := uint32(1)
			for op := range 20_000 {
				d := randomData(rng, width, space)
				e, held := model[string(d)]
				switch r := rng.IntN(100); {
				case r < 40:
					ref := uint32(rng.IntN(1 << 20))
					if got := x.Put(d, ref); got == held {
						t.Fatalf("op %d: Put(%x) = %v, held %v", op, d, got, held)
					}
					if !held {
						model[string(d)] = entry{ref: ref}
					}
				case r < 65:
					if got := x.Delete(d); got != held {
						t.Fatalf("op %d: Delete(%x) = %v, held %v", op, d, got, held)
					}
					delete(model, string(d))
				case r < 78:
					// MarkMany of a chunk (duplicates in it included) is
					// Mark of each entry in order; of another width, none.
					w := width
					if rng.IntN(10) == 0 {
						w = width + 1
					}
					n := rng.IntN(40)
					data := make([]byte, 0, n*w)
					for range n {
						data = append(data, randomData(rng, w, space)...)
					}
					if w == width && x.Width() == width && rng.IntN(2) == 0 {
						// A read of what is held, in order, a chunk at a time.
						all := heldInOrder(rng, x, width, space)
						at := rng.IntN(len(all)/width + 1)
						n = min(len(all)/width-at, 1+rng.IntN(60))
						data = all[at*width : (at+n)*width]
					}
					got := make([]bool, n)
					x.MarkMany(data, w, gen, got)
					for i := range n {
						d := data[i*w : (i+1)*w]
						e, held := model[string(d)]
						if want := w == width && held && e.mark != gen; got[i] != want {
							t.Fatalf("op %d: MarkMany entry %d (%x, %d) = %v; want %v", op, i, d, gen, got[i], want)
						}
						if held && w == width {
							model[string(d)] = entry{ref: e.ref, mark: gen}
						}
					}
				case r < 85:
					want := held && e.mark != gen
					if got := x.Mark(d, gen); got != want {
						t.Fatalf("op %d: Mark(%x, %d) = %v; want %v", op, d, gen, got, want)
					}
					if held {
						model[string(d)] = entry{ref: e.ref, mark: gen}
					}
				case r < 90:
					var want []uint32
					for _, e := range model {
						if e.mark != gen {
							want = append(want, e.ref)
						}
					}
					got := x.AppendUnmarked(nil, gen)
					slices.Sort(got)
					slices.Sort(want)
					if !slices.Equal(got, want) {
						t.Fatalf("op %d: AppendUnmarked(%d) = %v; want %v", op, gen, got, want)
					}
					gen++
				case r < 93:
					data, refs := randomBatch(rng, width, space)
					putMany(t, x, model, data, refs)
				case r < 94:
					x.Settle()
					check(t, x, model)
				default:
					r, ok := x.Ref(d)
					if ok != held || (held && r != e.ref) {
						t.Fatalf("op %d: Ref(%x) = %d, %v; want %d, %v", op, d, r, ok, e.ref, held)
					}
				}
				if op%500 == 0 {
					check(t, x, model)
				}
			}
			check(t, x, model)
		})
	}
}

// randomBatch returns up to 300 entries, most of them width bytes long
// (some equal to each other), a few of another length or with a
// reference above MaxRef.
func randomBatch(rng *rand.Rand, width, space int) ([][]byte, []uint32) {
	n := rng.IntN(300)
	data, refs := make([][]byte, n), make([]uint32, n)
	for i := range n {
		w := width
		if rng.IntN(20) == 0 {
			w = rng.IntN(2 * (width + 1))
		}
		data[i], refs[i] = randomData(rng, w, space), uint32(rng.IntN(1<<20))
		if rng.IntN(50) == 0 {
			refs[i] = MaxRef + 1
		}
	}
	return data, refs
}

// randomData returns width bytes spelling one of space numbers.
func randomData(rng *rand.Rand, width, space int) []byte {
	d := make([]byte, width)
	if width < 4 {
		for j := range d {
			d[j] = byte(rng.IntN(space))
		}
	} else {
		binary.LittleEndian.PutUint32(d[width-4:], uint32(rng.IntN(space)))
	}
	return d
}

// putMany checks PutMany against the model's Puts one after another.
func putMany(t *testing.T, x *Index, model map[string]entry, data [][]byte, refs []uint32) {
	t.Helper()
	ok := make([]bool, len(data))
	for i := range ok {
		ok[i] = i%2 == 0 // PutMany sets every one
	}
	width := x.Width()
	x.PutMany(data, refs, ok)
	for i, d := range data {
		if len(model) == 0 && width == -1 && refs[i] <= MaxRef {
			width = len(d)
		}
		_, held := model[string(d)]
		want := !held && len(d) == width && refs[i] <= MaxRef
		if ok[i] != want {
			t.Fatalf("PutMany: entry %d (%x, ref %d): ok %v, want %v", i, d, refs[i], ok[i], want)
		}
		if want {
			model[string(d)] = entry{ref: refs[i]}
		}
	}
	check(t, x, model)
}

// TestSettle checks that Settle lays the positions out in the order of
// the last read, so that a read in that order matches every entry in
// order, and that churn without reads keeps the positions bounded.
func TestSettle(t *testing.T) {
	const n = 10_000
	x := New()
	model := map[string]entry{}
	data, refs := make([][]byte, n), make([]uint32, n)
	for i := range data {
		data[i], refs[i] = binary.LittleEndian.AppendUint64(nil, uint64(i)*0x9e3779b97f4a7c15), uint32(i)
	}
	putMany(t, x, model, data, refs)
	rng := rand.New(rand.NewPCG(7, 8))
	read := slices.Clone(data)
	rng.Shuffle(n, func(i, j int) { read[i], read[j] = read[j], read[i] })
	markAll := func(gen uint32) {
		flat := slices.Concat(read...)
		first := make([]bool, 4096)
		for i := 0; i < n; i += 4096 {
			m := min(4096, n-i)
			x.MarkMany(flat[i*8:(i+m)*8], 8, gen, first[:m])
			if slices.Contains(first[:m], false) {
				t.Fatalf("read %d: an entry held was not seen first", gen)
			}
		}
		for d, e := range model {
			model[d] = entry{ref: e.ref, mark: gen}
		}
	}
	markAll(1)
	if x.jumps < n/2 || !x.Settle() {
		t.Fatalf("a read in another order than the positions: %d jumps, and Settle did nothing", x.jumps)
	}
	for p, r := range x.refs {
		if string(x.data[p*8:(p+1)*8]) != string(read[p]) || r == gone {
			t.Fatalf("position %d holds %x, the read's %d-th entry was %x", p, x.data[p*8:(p+1)*8], p, read[p])
		}
	}
	check(t, x, model)
	markAll(2)
	if x.jumps != 0 || x.Settle() {
		t.Fatalf("a read in the positions' order made %d jumps; Settle must have nothing to do", x.jumps)
	}
	for i := range 100_000 { // churn without reads
		d := binary.LittleEndian.AppendUint64(nil, uint64(i)|1<<63)
		x.Put(d, 1)
		x.Delete(d)
		if len(x.refs) > 2*x.Len()+1024+1 {
			t.Fatalf("after %d puts and deletes: %d positions for %d entries", i+1, len(x.refs), x.Len())
		}
	}
	check(t, x, model)
}

func TestPutMany(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, width := range []int{0, 1, 5, 8, 20} {
		x := New()
		model := map[string]entry{}
		putMany(t, x, model, nil, nil)
		for range 30 {
			data, refs := randomBatch(rng, width, 50)
			putMany(t, x, model, data, refs)
		}
		big := make([][]byte, 50_000)
		refs := make([]uint32, len(big))
		for i := range big {
			big[i] = binary.LittleEndian.AppendUint64(make([]byte, 0, 8), uint64(i)*0x9e3779b97f4a7c15)[:min(8, width)]
			refs[i] = uint32(i)
		}
		putMany(t, x, model, big, refs)
	}
}

// FuzzIndex runs the operations a byte string spells on an index and a
// model; no input may panic or make them disagree.
func FuzzIndex(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{0, 0, 0, 1, 1, 1, 2, 2, 2, 0, 3, 4, 5})
	f.Fuzz(func(t *testing.T, ops []byte) {
		x := New()
		model := map[string]entry{}
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], ops[i+1]
			d := []byte{arg & 0x3f, arg >> 6, 0}[:2]
			if op&0x80 != 0 {
				d = d[:op>>5&3] // another width now and then
			}
			e, held := model[string(d)]
			fits := x.Width() == -1 || x.Width() == len(d)
			if op%7 == 6 { // a batch of the next few entries
				var data [][]byte
				var refs []uint32
				for j := 0; j < int(arg%8) && i+1+j < len(ops); j++ {
					data = append(data, []byte{ops[i+1+j] & 0x3f, ops[i+1+j] >> 6, 0}[:2+int(ops[i+1+j]>>7)&1])
					refs = append(refs, uint32(j))
				}
				putMany(t, x, model, data, refs)
				continue
			}
			if op%11 == 10 { // a read of the next few entries at once, or the index settled
				if arg%4 == 0 {
					x.Settle()
					continue
				}
				var data []byte
				n := 0
				for j := 0; j < int(arg%8) && i+1+j < len(ops); j++ {
					data = append(data, ops[i+1+j]&0x3f, ops[i+1+j]>>6)
					n++
				}
				first := make([]bool, n)
				x.MarkMany(data, 2, 1, first)
				for j := range n {
					d := data[2*j : 2*j+2]
					e, held := model[string(d)]
					if want := held && x.Width() == 2 && e.mark != 1; first[j] != want {
						t.Fatalf("MarkMany entry %d (%x) = %v; want %v", j, d, first[j], want)
					}
					if held && x.Width() == 2 {
						model[string(d)] = entry{ref: e.ref, mark: 1}
					}
				}
				continue
			}
			switch op % 4 {
			case 0, 1:
				if got, want := x.Put(d, uint32(op)), !held && fits; got != want {
					t.Fatalf("Put(%x) = %v; want %v", d, got, want)
				}
				if !held && fits {
					model[string(d)] = entry{ref: uint32(op)}
				}
			case 2:
				if x.Delete(d) != held {
					t.Fatalf("Delete(%x) != %v", d, held)
				}
				delete(model, string(d))
			case 3:
				if got, want := x.Mark(d, 1), held && e.mark != 1; got != want {
					t.Fatalf("Mark(%x) = %v; want %v", d, got, want)
				}
				if held {
					model[string(d)] = entry{ref: e.ref, mark: 1}
				}
			}
		}
		check(t, x, model)
	})
}

// Width is the length of every entry held, or -1 before the first Put
// (and again once the index empties).
func (x *Index) Width() int { return x.width }

// Bytes is the memory the index holds (its slots and positions).
func (x *Index) Bytes() int { return len(x.slots) + cap(x.data) + 4*cap(x.refs) + 8*cap(x.marks) }
