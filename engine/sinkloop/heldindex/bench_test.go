package heldindex

import (
	"encoding/binary"
	"math/rand/v2"
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
