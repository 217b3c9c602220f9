package byteindex

import (
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// BenchmarkIndex100k measures the index on the flagship's map (100,000
// entries of a 4-byte key and a 4-byte value): putting every entry into a
// fresh index one by one and at once, and marking every entry, one by
// one and a chunk at a time, the chunks in an order the index does not
// know (markmany) and in the order of its positions (markmany-ordered).
func BenchmarkIndex100k(b *testing.B) {
	const n = 100_000
	data := make([][]byte, n)
	for i := range data {
		data[i] = binary.BigEndian.AppendUint32([]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}, 1)
	}
	b.Run("put", func(b *testing.B) {
		for b.Loop() {
			x := New()
			for i, d := range data {
				x.Put(d, uint32(i))
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/entry")
	})
	b.Run("putmany", func(b *testing.B) {
		refs := make([]uint32, n)
		for i := range refs {
			refs[i] = uint32(i)
		}
		ok := make([]bool, n)
		for b.Loop() {
			New().PutMany(data, refs, ok)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/entry")
	})
	b.Run("mark", func(b *testing.B) {
		x := New()
		for i, d := range data {
			x.Put(d, uint32(i))
		}
		gen := uint32(0)
		for b.Loop() {
			gen++
			for _, d := range data {
				x.Mark(d, gen)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/entry")
		b.ReportMetric(float64(x.Bytes())/n, "bytes/entry")
	})
	markMany := func(b *testing.B, shuffled bool) {
		const chunk = 4096
		// As a full read asks: 4,096 entries' bytes end to end at a time,
		// in the order of the positions (as a read after Settle finds
		// them) or in an order the index does not know (the first read).
		x := New()
		for i, d := range data {
			x.Put(d, uint32(i))
		}
		read := slices.Clone(data)
		if shuffled {
			rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { read[i], read[j] = read[j], read[i] })
		}
		flat := slices.Concat(read...)
		first := make([]bool, chunk)
		gen := uint32(0)
		for b.Loop() {
			gen++
			x.ordered = !shuffled // what Settle would leave
			for i := 0; i < n; i += chunk {
				m := min(chunk, n-i)
				x.MarkMany(flat[i*8:(i+m)*8], 8, gen, first[:m])
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/entry")
	}
	b.Run("markmany", func(b *testing.B) { markMany(b, true) })
	b.Run("markmany-ordered", func(b *testing.B) { markMany(b, false) })
}

// mapIndex is the contender BenchmarkIndexVsMap measures Index against: a
// Go map from the entry's bytes to its reference, and a bit per reference
// marking the entries the read in progress found (the map itself is not
// written by a read).
type mapIndex struct {
	refs  map[string]uint32
	marks []uint64
}

func newMapIndex() *mapIndex { return &mapIndex{refs: map[string]uint32{}} }

func (m *mapIndex) put(d []byte, ref uint32) {
	m.refs[string(d)] = ref
	if i := int(ref / 64); i >= len(m.marks) {
		m.marks = append(m.marks, make([]uint64, i+1-len(m.marks))...)
	}
}

// begin starts a read: no entry is marked.
func (m *mapIndex) begin() { clear(m.marks) }

func (m *mapIndex) markMany(data []byte, width int, first []bool) {
	for i := range first {
		ref, ok := m.refs[string(data[i*width:(i+1)*width])]
		if ok {
			m.marks[ref/64] |= 1 << (ref % 64)
		}
		first[i] = ok
	}
}

func (m *mapIndex) appendUnmarked(dst []uint32) []uint32 {
	for _, ref := range m.refs {
		if m.marks[ref/64]&(1<<(ref%64)) == 0 {
			dst = append(dst, ref)
		}
	}
	return dst
}

// BenchmarkIndexVsMap measures, on the flagship's map (100,000 entries of
// a 4-byte key and a 4-byte value), the work of one full read that finds
// every entry held (mark a chunk of 4,096 at a time, then list the
// unmarked) and of filling a fresh index, for Index and for a Go map keyed
// by the bytes (docs/performance.md).
func BenchmarkIndexVsMap(b *testing.B) {
	const n, chunk = 100_000, 4096
	data := make([][]byte, n)
	for i := range data {
		data[i] = binary.BigEndian.AppendUint32([]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}, 1)
	}
	shuffled := slices.Clone(data)
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	perEntry := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/entry")
	}
	for _, order := range []struct {
		name string
		read [][]byte
	}{{"read-in-put-order", data}, {"read-shuffled", shuffled}} {
		flat := slices.Concat(order.read...)
		first := make([]bool, chunk)
		b.Run("index/"+order.name, func(b *testing.B) {
			x := New()
			for i, d := range data {
				x.Put(d, uint32(i))
			}
			x.Settle()
			var unmarked []uint32
			gen := uint32(0)
			for b.Loop() {
				gen++
				for i := 0; i < n; i += chunk {
					m := min(chunk, n-i)
					x.MarkMany(flat[i*8:(i+m)*8], 8, gen, first[:m])
				}
				unmarked = x.AppendUnmarked(unmarked[:0], gen)
			}
			perEntry(b)
			b.ReportMetric(float64(x.Bytes())/n, "bytes/entry")
		})
		b.Run("map/"+order.name, func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			m := newMapIndex()
			for i, d := range data {
				m.put(d, uint32(i))
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			size := float64(after.HeapAlloc-before.HeapAlloc) / n
			var unmarked []uint32
			for b.Loop() {
				m.begin()
				for i := 0; i < n; i += chunk {
					k := min(chunk, n-i)
					m.markMany(flat[i*8:(i+k)*8], 8, first[:k])
				}
				unmarked = m.appendUnmarked(unmarked[:0])
			}
			perEntry(b)
			b.ReportMetric(size, "bytes/entry")
		})
	}
	b.Run("index/fill", func(b *testing.B) {
		for b.Loop() {
			x := New()
			for i, d := range data {
				x.Put(d, uint32(i))
			}
		}
		perEntry(b)
	})
	b.Run("map/fill", func(b *testing.B) {
		for b.Loop() {
			m := newMapIndex()
			for i, d := range data {
				m.put(d, uint32(i))
			}
		}
		perEntry(b)
	})
}
