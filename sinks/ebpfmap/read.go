package ebpfmap

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"unsafe"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// reader turns the chunks of a full read into entries with few
// allocations: each chunk's key strings share one string, its bytes one
// slice, its raws one slice, and equal values share one cty.Value.
type reader struct {
	t      *Target
	out    []node.Entry
	values map[string]cty.Value // encoded value bytes (every CPU's copy) -> Value
	sbuf   []byte
	ends   []int
	dbuf   []byte // scan's scratch Data
	count  int    // entries scanned
}

// maxCachedValues bounds the distinct values a read remembers; maps whose
// values are all different (counters, IDs) stop caching there.
const maxCachedValues = 4096

func newReader(t *Target) *reader {
	return &reader{t: t, values: map[string]cty.Value{}}
}

// chunk appends the entries of n keys and their n*ncpu values.
func (r *reader) chunk(n int, keys, vals []byte) {
	t := r.t
	ks, vs := int(t.s.spec.KeySize), int(t.s.spec.ValueSize)
	fvs := vs * t.ncpu
	if r.out == nil { // sized by the last read: a map rarely changes much between reads
		r.out = make([]node.Entry, 0, max(t.lastCount+t.lastCount/8, 64))
	}
	data := make([]byte, n*(ks+vs)) // every entry's Data, in one slab
	r.sbuf, r.ends = r.sbuf[:0], r.ends[:0]
	first := len(r.out)
	for i := range n {
		k, v := keys[i*ks:(i+1)*ks], vals[i*fvs:(i+1)*fvs]
		if t.isArr && allZero(v) {
			continue // an array slot holding zeros is an absent entry
		}
		d := data[i*(ks+vs) : (i+1)*(ks+vs) : (i+1)*(ks+vs)]
		copy(d, k)
		copy(d[ks:], v[:vs])
		if t.ncpu > 1 && !sameCopies(v, vs) {
			// CPUs disagree: every copy, so the entry differs from any
			// prepared one and is rewritten.
			d = append(append([]byte(nil), k...), v...)
		}
		r.sbuf = t.s.key.enc.appendCanonical(r.sbuf, k)
		r.ends = append(r.ends, len(r.sbuf))
		r.out = append(r.out, node.Entry{Value: r.value(v, vs), Data: d})
	}
	s, prev := string(r.sbuf), 0
	for j, end := range r.ends {
		r.out[first+j].Key = s[prev:end]
		prev = end
	}
}

// scan passes each entry of a chunk to known, and builds the entries
// known does not recognise (ScanActual). An entry whose CPUs disagree is
// never known: it differs from any prepared one.
func (r *reader) scan(n int, keys, vals []byte, known func(key, data []byte) bool, add func(node.Entry)) {
	t := r.t
	ks, vs := int(t.s.spec.KeySize), int(t.s.spec.ValueSize)
	fvs := vs * t.ncpu
	for i := range n {
		k, v := keys[i*ks:(i+1)*ks], vals[i*fvs:(i+1)*fvs]
		if t.isArr && allZero(v) {
			continue // an array slot holding zeros is an absent entry
		}
		r.count++
		same := t.ncpu == 1 || sameCopies(v, vs)
		if same {
			r.dbuf = append(append(r.dbuf[:0], k...), v[:vs]...)
			r.sbuf = t.s.key.enc.appendCanonical(r.sbuf[:0], k)
			if known(r.sbuf, r.dbuf) {
				continue
			}
		}
		d := append(append(make([]byte, 0, ks+len(v)), k...), v[:vs]...)
		if !same {
			d = append(d[:ks], v...)
		}
		add(node.Entry{Key: string(t.s.key.enc.appendCanonical(r.sbuf[:0], k)), Value: r.value(v, vs), Data: d})
	}
}

// value returns the Value of one entry's value bytes: the hex of one copy,
// or for a per-CPU map whose CPUs disagree, every copy's hex joined by
// commas (which differs from any prepared value, so it is rewritten).
func (r *reader) value(v []byte, vs int) cty.Value {
	if c, ok := r.values[string(v)]; ok {
		return c
	}
	same := true
	for off := vs; off < len(v) && same; off += vs {
		same = bytes.Equal(v[off:off+vs], v[:vs])
	}
	h := hex.AppendEncode(nil, v[:vs])
	for off := vs; off < len(v) && !same; off += vs {
		h = hex.AppendEncode(append(h, ','), v[off:off+vs])
	}
	c := cty.StringVal(string(h))
	if len(r.values) < maxCachedValues {
		r.values[string(v)] = c
	}
	return c
}

// sameCopies reports whether every vs-byte copy in v (one per CPU) is
// equal to the first.
func sameCopies(v []byte, vs int) bool {
	for off := vs; off < len(v); off += vs {
		if !bytes.Equal(v[off:off+vs], v[:vs]) {
			return false
		}
	}
	return true
}

// hexValue is the Value of an encoded value: its bytes in hex.
func hexValue(v []byte) cty.Value { return cty.StringVal(hex.EncodeToString(v)) }

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// byteSlab returns a slice of n fixed-size byte arrays (what cilium/ebpf's
// batch and per-CPU calls expect) and a flat view of its memory.
func byteSlab(size, n int) (any, []byte) {
	sl := reflect.MakeSlice(reflect.SliceOf(reflect.ArrayOf(size, reflect.TypeFor[byte]())), n, n)
	return sl.Interface(), unsafe.Slice((*byte)(sl.UnsafePointer()), size*n)
}
