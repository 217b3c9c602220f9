package ebpfmap

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// reader is one full read of the map (ScanActual): per entry, its bytes
// (Data) and, for an entry known does not recognise, its key in canonical
// form and its shown value, equal values sharing one (Target.shownValue).
type reader struct {
	t     *Target
	sbuf  []byte // the canonical key being built
	dbuf  []byte // the Data of the chunk's entries known is asked about
	asked []int  // the index in the chunk of each entry in dbuf
	known []bool // known's answers
	count int    // entries read
}

// maxCachedValues bounds the distinct values a target remembers the shown
// form of; maps whose values are all different (counters, IDs) stop
// caching there.
const maxCachedValues = 4096

// scan passes the Data of a chunk's entries (n keys and their n*ncpu
// values) to known, when set, in one call, and builds the entries known
// does not recognise. An entry whose CPUs disagree is never known: it
// differs from any prepared one, so it is rewritten.
func (r *reader) scan(n int, keys, vals []byte, known func(data []byte, width int, known []bool), add func(node.Entry)) {
	t := r.t
	ks, vs := int(t.s.spec.KeySize), int(t.s.spec.ValueSize)
	fvs := vs * t.ncpu
	if known != nil && t.ncpu == 1 && !t.isArr {
		// Every entry is asked about: its Data is its key and value
		// bytes side by side.
		r.count += n
		r.dbuf = interleave(r.dbuf, keys[:n*ks], vals[:n*vs], ks, vs)
		known(r.dbuf, ks+vs, r.answers(n))
		for i, ok := range r.known {
			if !ok {
				r.build(keys[i*ks:(i+1)*ks], vals[i*vs:(i+1)*vs], add)
			}
		}
		return
	}
	r.dbuf, r.asked = r.dbuf[:0], r.asked[:0]
	for i := range n {
		k, v := keys[i*ks:(i+1)*ks], vals[i*fvs:(i+1)*fvs]
		if t.isArr && allZero(v) {
			continue // an array slot holding zeros is an absent entry
		}
		r.count++
		if known != nil && (t.ncpu == 1 || sameCopies(v, vs)) {
			r.dbuf = append(append(r.dbuf, k...), v[:vs]...)
			r.asked = append(r.asked, i)
			continue
		}
		r.build(k, v, add)
	}
	if len(r.asked) == 0 {
		return
	}
	known(r.dbuf, ks+vs, r.answers(len(r.asked)))
	for j, i := range r.asked {
		if !r.known[j] {
			r.build(keys[i*ks:(i+1)*ks], vals[i*fvs:(i+1)*fvs], add)
		}
	}
}

// answers returns room for known's answers about n entries.
func (r *reader) answers(n int) []bool {
	if cap(r.known) < n {
		r.known = make([]bool, n)
	}
	r.known = r.known[:n]
	return r.known
}

// interleave returns in dst (grown as needed) the n entries of keys (ks
// bytes each) and vals (vs bytes each) as key bytes followed by value
// bytes, entry after entry.
func interleave(dst, keys, vals []byte, ks, vs int) []byte {
	n := len(keys) / ks
	w := ks + vs
	dst = slices.Grow(dst[:0], n*w)[:n*w]
	if ks == 4 && vs == 4 { // the flagship's IPv4 key and u32 value
		ne := binary.NativeEndian
		for i := range n {
			ne.PutUint32(dst[8*i:], ne.Uint32(keys[4*i:]))
			ne.PutUint32(dst[8*i+4:], ne.Uint32(vals[4*i:]))
		}
		return dst
	}
	for i := range n {
		copy(dst[i*w:], keys[i*ks:(i+1)*ks])
		copy(dst[i*w+ks:(i+1)*w], vals[i*vs:(i+1)*vs])
	}
	return dst
}

// build passes the entry of key bytes k and value bytes v (every CPU's
// copy) to add.
func (r *reader) build(k, v []byte, add func(node.Entry)) {
	t := r.t
	vs := int(t.s.spec.ValueSize)
	d := append(make([]byte, 0, len(k)+len(v)), k...)
	var shown cty.Value
	if t.ncpu == 1 || sameCopies(v, vs) {
		d, shown = append(d, v[:vs]...), t.shownValue(v[:vs])
	} else {
		d, shown = append(d, v...), everyCopy(v, vs)
	}
	add(node.Entry{Key: string(t.s.key.enc.appendCanonical(r.sbuf[:0], k)), Value: shown, Data: d})
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

// ReadEntry implements node.KeyReader: one lookup of the entry at e's
// key (the key bytes its Data starts with), built as Actual builds it.
// It writes no entry (a removed pin is pinned again, as by a full read).
// An LPM trie's lookup finds the longest prefix covering the key, not
// the key: there the map is read whole (readExact).
func (t *Target) ReadEntry(ctx context.Context, e node.Entry) (node.Entry, bool, error) {
	ks, vs := int(t.s.spec.KeySize), int(t.s.spec.ValueSize)
	if len(e.Data) < ks {
		return node.Entry{}, false, fmt.Errorf("read map %s: entry %q carries no key bytes", t.s.pin, e.Key)
	}
	if t.m == nil || ctx.Err() != nil {
		return node.Entry{}, false, ctx.Err()
	}
	if err := t.checkPin(); err != nil {
		return node.Entry{}, false, err
	}
	k := e.Data[:ks:ks]
	if t.s.spec.Type == ebpf.LPMTrie {
		return t.readExact(ctx, k)
	}
	vals, vb := byteSlab(vs, t.ncpu)
	var err error
	if t.ncpu > 1 {
		err = t.m.Lookup(k, vals)
	} else {
		err = t.m.Lookup(k, &vb)
	}
	switch {
	case errors.Is(err, ebpf.ErrKeyNotExist):
		return node.Entry{}, false, nil
	case err != nil:
		return node.Entry{}, false, fmt.Errorf("read map %s: %w", t.s.pin, err)
	case t.isArr && allZero(vb):
		return node.Entry{}, false, nil // an array slot holding zeros is an absent entry
	}
	var out node.Entry
	(&reader{t: t}).build(k, vb, func(b node.Entry) { out = b })
	return out, true, nil
}

// readExact reads the map whole for the entry whose key bytes are k.
func (t *Target) readExact(ctx context.Context, k []byte) (node.Entry, bool, error) {
	ks, vs := int(t.s.spec.KeySize), int(t.s.spec.ValueSize)*t.ncpu
	var out node.Entry
	found := false
	r := &reader{t: t}
	err := t.readAll(ctx, func(n int, keys, vals []byte) {
		for i := 0; i < n && !found; i++ {
			if bytes.Equal(keys[i*ks:(i+1)*ks], k) {
				r.build(keys[i*ks:(i+1)*ks], vals[i*vs:(i+1)*vs], func(b node.Entry) { out = b })
				found = true
			}
		}
	})
	if err != nil {
		return node.Entry{}, false, fmt.Errorf("read map %s: %w", t.s.pin, err)
	}
	return out, found, nil
}
