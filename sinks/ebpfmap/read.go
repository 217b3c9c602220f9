package ebpfmap

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"unsafe"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// reader is one full read of the map (ScanActual): per entry, its bytes
// (Data) and, for an entry known does not recognise, its key in canonical
// form and its shown value, equal values sharing one (Target.shownValue).
type reader struct {
	t     *Target
	sbuf  []byte // the canonical key being built
	dbuf  []byte // the Data being looked at
	count int    // entries read
}

// maxCachedValues bounds the distinct values a target remembers the shown
// form of; maps whose values are all different (counters, IDs) stop
// caching there.
const maxCachedValues = 4096

// scan passes each entry of a chunk (n keys and their n*ncpu values) to
// known, when set, and builds the entries known does not recognise. An
// entry whose CPUs disagree is never known: it differs from any prepared
// one, so it is rewritten.
func (r *reader) scan(n int, keys, vals []byte, known func(data []byte) bool, add func(node.Entry)) {
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
		if same && known != nil {
			r.dbuf = append(append(r.dbuf[:0], k...), v[:vs]...)
			if known(r.dbuf) {
				continue
			}
		}
		d := append(make([]byte, 0, ks+len(v)), k...)
		var shown cty.Value
		if same {
			d, shown = append(d, v[:vs]...), t.shownValue(v[:vs])
		} else {
			d, shown = append(d, v...), everyCopy(v, vs)
		}
		add(node.Entry{Key: string(t.s.key.enc.appendCanonical(r.sbuf[:0], k)), Value: shown, Data: d})
	}
}

// everyCopy is the shown value of a per-CPU value whose CPUs disagree:
// every copy's hex, joined by commas (which differs from any prepared
// value).
func everyCopy(v []byte, vs int) cty.Value {
	h := hex.AppendEncode(nil, v[:vs])
	for off := vs; off < len(v); off += vs {
		h = hex.AppendEncode(append(h, ','), v[off:off+vs])
	}
	return cty.StringVal(string(h))
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
