package ebpfmap

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/pipeline/pipeline/engine/node"
)

// Update implements node.Target. Entries that fail get Err; the others are
// written, in batches where the map supports them. A per-CPU map gets the
// value on every CPU.
func (t *Target) Update(ctx context.Context, batch []node.Entry) {
	t.write(ctx, batch, false)
}

// Delete implements node.Target. Deleting a missing key succeeds. In an
// array map, where every index exists, a delete writes a zero value.
func (t *Target) Delete(ctx context.Context, batch []node.Entry) {
	t.write(ctx, batch, true)
}

func (t *Target) write(ctx context.Context, batch []node.Entry, del bool) {
	if t.m == nil || t.plan {
		for i := range batch {
			batch[i].Err = fmt.Errorf("%s: map %s is not open for writing (plan mode)", t.s.address, t.s.pin)
		}
		return
	}
	full := false
	sl := t.buffers()
	for start := 0; start < len(batch); start += batchSize {
		if err := ctx.Err(); err != nil {
			for i := start; i < len(batch); i++ {
				batch[i].Err = err
			}
			return
		}
		chunk := batch[start:min(start+batchSize, len(batch))]
		prepared := true
		for i := range chunk {
			if !t.prepared(chunk[i]) {
				chunk[i].Err = fmt.Errorf("entry %s was not prepared by this target", chunk[i].Key)
				prepared = false
			}
		}
		switch {
		case t.batch && prepared:
			t.writeBatch(chunk, del, sl)
		default:
			t.writeEach(chunk, del, sl)
		}
		for i := range chunk {
			full = full || isFull(chunk[i].Err)
		}
	}
	t.afterWrite(full)
}

func (t *Target) afterWrite(full bool) {
	switch {
	case full:
		t.health = node.Degraded
		t.env.Health.Set(node.Degraded, fmt.Sprintf("map %s is full (max_entries %d)", t.s.pin, t.s.spec.MaxEntries))
	case t.health == node.Degraded:
		t.health = node.Healthy
		t.env.Health.Set(node.Healthy, "")
	}
}

func isFull(err error) bool { return errors.Is(err, unix.E2BIG) || errors.Is(err, unix.ENOSPC) }

// entryErr wraps a kernel error for one entry, naming the map. The engine
// logs it with the entry's key and operation.
func (t *Target) entryErr(err error) error {
	if isFull(err) {
		if t.met.full != nil {
			t.met.full.Inc()
		}
		return fmt.Errorf("map %s is full (max_entries %d): %w", t.s.pin, t.s.spec.MaxEntries, err)
	}
	return fmt.Errorf("map %s: %w", t.s.pin, explain(err))
}

// fill copies the chunk's keys, and its values (every CPU's copy; zeros
// for an array delete), into the slabs.
func (t *Target) fill(chunk []node.Entry, del bool, sl *slabs) {
	ks, vs := sl.ks, sl.vs
	if !del && t.ncpu == 1 && fillWords(chunk, sl.kb, sl.vb, ks, vs) {
		return
	}
	for i, e := range chunk {
		copy(sl.kb[i*ks:], e.Data[:ks])
		if del && !t.isArr {
			continue
		}
		v := e.Data[ks:]
		if del {
			v = t.zero
		}
		for c := range t.ncpu {
			copy(sl.vb[(i*t.ncpu+c)*vs:], v)
		}
	}
}

// fillWords is fill for keys and values of 4 or 8 bytes on a map that is
// not per-CPU (an IPv4 or LPM key, a u32 or u64 value: most maps): word
// loads and stores instead of two memmove calls per entry, so that the
// loads of successive entries' bytes, each a likely cache miss after the
// kernel's last batch, overlap. It reports false for other shapes.
func fillWords(chunk []node.Entry, kb, vb []byte, ks, vs int) bool {
	if (ks != 4 && ks != 8) || (vs != 4 && vs != 8) {
		return false
	}
	ne := binary.NativeEndian
	kb, vb = kb[:ks*len(chunk)], vb[:vs*len(chunk)]
	for i, e := range chunk {
		d := e.Data[: ks+vs : ks+vs]
		if ks == 4 {
			ne.PutUint32(kb[4*i:], ne.Uint32(d))
		} else {
			ne.PutUint64(kb[8*i:], ne.Uint64(d))
		}
		if vs == 4 {
			ne.PutUint32(vb[4*i:], ne.Uint32(d[ks:]))
		} else {
			ne.PutUint64(vb[8*i:], ne.Uint64(d[ks:]))
		}
	}
	return true
}

// writeBatch writes chunk with batch syscalls. A batch call stops at the
// first failing element and reports how many it did; that element gets the
// error (a delete of a missing key succeeds) and the call resumes after it,
// so one bad entry never fails the others.
func (t *Target) writeBatch(chunk []node.Entry, del bool, sl *slabs) {
	t.fill(chunk, del, sl)
	n := len(chunk)
	for i := 0; i < n; {
		keys := sl.keys.Slice(i, n).Interface()
		var done int
		var err error
		if del && !t.isArr {
			done, err = t.m.BatchDelete(keys, nil)
		} else {
			done, err = t.m.BatchUpdate(keys, sl.vals.Slice(i*t.ncpu, n*t.ncpu).Interface(), nil)
		}
		if err != nil && done >= n-i {
			// The kernel failed the call before looking at any element
			// (EPERM, EINVAL) and left the count as requested: find out
			// per entry.
			if errors.Is(err, ebpf.ErrNotSupported) {
				t.batch = false
			}
			t.writeEach(chunk[i:], del, sl)
			return
		}
		if t.met.batch != nil && done > 0 {
			t.met.batch.Observe(float64(done))
		}
		i += done
		if err == nil || i >= n {
			return
		}
		if errors.Is(err, ebpf.ErrNotSupported) {
			t.batch = false
			t.writeEach(chunk[i:], del, sl)
			return
		}
		if !(del && errors.Is(err, ebpf.ErrKeyNotExist)) {
			chunk[i].Err = t.entryErr(err)
		}
		i++
	}
}

// writeEach writes entries one syscall each (maps without batch support,
// and chunks holding entries this target did not prepare).
func (t *Target) writeEach(chunk []node.Entry, del bool, sl *slabs) {
	one := sl.vals.Slice(0, t.ncpu) // a per-CPU value: ncpu copies
	vb := sl.vb[:t.ncpu*sl.vs]
	for i := range chunk {
		if !t.prepared(chunk[i]) {
			continue
		}
		key, value := t.split(chunk[i])
		var err error
		switch {
		case del && !t.isArr:
			if err = t.m.Delete(key); errors.Is(err, ebpf.ErrKeyNotExist) {
				err = nil
			}
		case t.ncpu > 1:
			v := value
			if del {
				v = t.zero
			}
			for c := range t.ncpu {
				copy(vb[c*sl.vs:], v)
			}
			err = t.m.Put(key, one.Interface())
		case del:
			err = t.m.Put(key, t.zero)
		default:
			err = t.m.Put(key, value)
		}
		if err != nil {
			chunk[i].Err = t.entryErr(err)
		}
	}
}

// slabs are the key and value buffers of batch syscalls: batchSize keys
// and their values (every CPU's copy), as the slices cilium/ebpf takes
// (keys, vals; and keysAny, valsAny, boxed once) and flat views of their
// memory (kb, vb).
type slabs struct {
	ks, vs           int
	keys, vals       reflect.Value
	keysAny, valsAny any
	kb, vb           []byte
}

// buffers returns the target's batch buffers, allocated on first use and
// kept for its life (about 32 KB for an IPv4 key and a u32 value): every
// write and read goes through them a chunk at a time. Buffers allocated
// per call cost the first full reconcile of 100,000 keys 25 fresh pairs,
// each page of them a page fault. A read's visit (readAll) must not
// write: both use the same buffers.
func (t *Target) buffers() *slabs {
	if t.buf == nil {
		keys, kb := byteSlab(int(t.s.spec.KeySize), batchSize)
		vals, vb := byteSlab(int(t.s.spec.ValueSize), batchSize*t.ncpu)
		t.buf = &slabs{ks: int(t.s.spec.KeySize), vs: int(t.s.spec.ValueSize), keys: reflect.ValueOf(keys), vals: reflect.ValueOf(vals),
			keysAny: keys, valsAny: vals, kb: kb, vb: vb}
	}
	return t.buf
}

// Interface guards.
var _ node.Target = (*Target)(nil)
