package ebpfmap

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestFillWords checks the word-wise fill against plain copies for every
// key and value size it takes, and that it refuses the others.
func TestFillWords(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, ks := range []int{4, 8} {
		for _, vs := range []int{4, 8} {
			n := 1 + r.IntN(50)
			var data, wantK, wantV []byte
			for range n {
				d := make([]byte, ks+vs)
				for j := range d {
					d[j] = byte(r.Uint32())
				}
				data = append(data, d...)
				wantK, wantV = append(wantK, d[:ks]...), append(wantV, d[ks:]...)
			}
			kb, vb := make([]byte, ks*n+8), make([]byte, vs*n+8)
			if !fillWords(data, kb, vb, ks, vs) {
				t.Fatalf("key %d, value %d bytes: refused", ks, vs)
			}
			if !bytes.Equal(kb[:len(wantK)], wantK) || !bytes.Equal(vb[:len(wantV)], wantV) {
				t.Fatalf("key %d, value %d bytes: keys %x values %x, want %x %x", ks, vs, kb, vb, wantK, wantV)
			}
		}
	}
	for _, sz := range [][2]int{{16, 4}, {4, 12}, {20, 8}, {1, 4}} {
		if fillWords(nil, nil, nil, sz[0], sz[1]) {
			t.Errorf("key %d, value %d bytes: taken", sz[0], sz[1])
		}
	}
}

// TestInterleave checks the full read's pairing of key and value bytes
// into Data, word-sized and not, against plain appends.
func TestInterleave(t *testing.T) {
	for _, size := range [][2]int{{4, 4}, {4, 8}, {16, 2}} {
		ks, vs := size[0], size[1]
		const n = 37
		keys, vals := make([]byte, n*ks), make([]byte, n*vs)
		for i := range keys {
			keys[i] = byte(i)
		}
		for i := range vals {
			vals[i] = byte(200 - i)
		}
		var want []byte
		for i := range n {
			want = append(append(want, keys[i*ks:(i+1)*ks]...), vals[i*vs:(i+1)*vs]...)
		}
		if got := interleave(make([]byte, 3), keys, vals, ks, vs); !bytes.Equal(got, want) {
			t.Errorf("%d-byte keys, %d-byte values: got %x, want %x", ks, vs, got, want)
		}
	}
}
