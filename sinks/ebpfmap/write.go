package ebpfmap

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"

	"github.com/cilium/ebpf"
	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

	"github.com/pipeline/pipeline/engine/node"
)

// Update implements node.Target. Entries that fail get Err; the others are
// written, in batches where the map supports them. A per-CPU map gets the
// value on every CPU.
func (t *Target) Update(ctx context.Context, batch []node.Entry) {
	t.writeEntries(ctx, batch, false)
}

// Delete implements node.Target. Deleting a missing key succeeds. In an
// array map, where every index exists, a delete writes a zero value.
func (t *Target) Delete(ctx context.Context, batch []node.Entry) {
	t.writeEntries(ctx, batch, true)
}

// UpdateData implements node.Chunked: Update of the len(errs) entries
// whose Data (key bytes, then the value) lie end to end in data, width
// bytes each, as the sink loop hands over a full reconcile's writes.
func (t *Target) UpdateData(ctx context.Context, data []byte, width int, errs []error) {
	if width != t.width() || len(data) < len(errs)*width {
		err := fmt.Errorf("entries of %d bytes were not prepared by this target", width)
		for i := range errs {
			errs[i] = err
		}
		return
	}
	t.writeData(ctx, data, width, false, errs)
}

// DeleteData implements node.Chunked: Delete of the len(errs) entries
// whose Data lie end to end in data, width bytes each; only each entry's
// key bytes are read.
func (t *Target) DeleteData(ctx context.Context, data []byte, width int, errs []error) {
	if width < int(t.s.spec.KeySize) || len(data) < len(errs)*width {
		err := fmt.Errorf("entries of %d bytes were not prepared by this target", width)
		for i := range errs {
			errs[i] = err
		}
		return
	}
	t.writeData(ctx, data, width, true, errs)
}

// ValueOf implements node.Chunked: the shown value of the entry with
// Data d (a per-CPU value whose CPUs disagree: every copy).
func (t *Target) ValueOf(d []byte) cty.Value {
	ks, vs := int(t.s.spec.KeySize), int(t.s.spec.ValueSize)
	if len(d) < ks+vs {
		return hexValue(d)
	}
	if v := d[ks:]; len(v) > vs {
		return everyCopy(v, vs)
	}
	return t.shownValue(d[ks:])
}

// writeEntries lays the Data of the entries this target prepared end to
// end and writes them (writeData); an entry it did not prepare fails alone.
func (t *Target) writeEntries(ctx context.Context, batch []node.Entry, del bool) {
	data, at := make([]byte, 0, len(batch)*t.width()), make([]int, 0, len(batch))
	for i := range batch {
		if !t.prepared(batch[i]) {
			batch[i].Err = fmt.Errorf("entry %s was not prepared by this target", batch[i].Key)
			continue
		}
		data, at = append(data, batch[i].Data...), append(at, i)
	}
	errs := make([]error, len(at))
	t.writeData(ctx, data, t.width(), del, errs)
	for j, i := range at {
		batch[i].Err = errs[j]
	}
}

// width is the length of an entry's Data: the key's bytes, then the value's.
func (t *Target) width() int { return int(t.s.spec.KeySize) + int(t.s.spec.ValueSize) }

func (t *Target) notWritable() error {
	return fmt.Errorf("%s: map %s is not open for writing (plan mode)", t.s.address, t.s.pin)
}

// writeData writes (or deletes) the len(errs) entries whose Data lie end
// to end in data, width bytes each (the target's width for a write), a
// batch of batchSize at a time through the target's buffers, and sets
// errs[i] when the i-th fails.
func (t *Target) writeData(ctx context.Context, data []byte, width int, del bool, errs []error) {
	clear(errs)
	refuse := t.lost
	if t.m == nil || t.plan {
		refuse = t.notWritable()
	}
	if refuse != nil {
		for i := range errs {
			errs[i] = refuse
		}
		return
	}
	n, w, full := len(errs), width, false
	sl := t.buffers()
	for start := 0; start < n; start += batchSize {
		if err := ctx.Err(); err != nil {
			for i := start; i < n; i++ {
				errs[i] = err
			}
			return
		}
		end := min(start+batchSize, n)
		t.fill(data[start*w:end*w], end-start, w, del, sl)
		t.send(end-start, del, sl, func(i int, err error) {
			errs[start+i] = err
			full = full || isFull(err)
		})
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

// fill copies the keys of the n entries whose Data lie end to end in
// data, w bytes each, and their values (every CPU's copy; zeros for an
// array delete), into the slabs.
func (t *Target) fill(data []byte, n, w int, del bool, sl *slabs) {
	ks, vs := sl.ks, sl.vs
	if !del && t.ncpu == 1 && fillWords(data[:n*w], sl.kb, sl.vb, ks, vs) {
		return
	}
	for i := range n {
		d := data[i*w : (i+1)*w]
		copy(sl.kb[i*ks:], d[:ks])
		if del && !t.isArr {
			continue
		}
		v := d[ks:]
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
func fillWords(data, kb, vb []byte, ks, vs int) bool {
	if (ks != 4 && ks != 8) || (vs != 4 && vs != 8) {
		return false
	}
	w := ks + vs
	n := len(data) / w
	kb, vb = kb[:ks*n], vb[:vs*n]
	for i := range n {
		splitWords(kb, vb, data[i*w:(i+1)*w:(i+1)*w], i, ks, vs)
	}
	return true
}

// splitWords puts the i-th entry's Data d (key, then value; each 4 or 8
// bytes) into the key and value slabs, one word each.
func splitWords(kb, vb, d []byte, i, ks, vs int) {
	ne := binary.NativeEndian
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

// send writes the n entries in the slabs (fill), with batch syscalls
// where the map takes them, and passes each entry that fails, and its
// error, to fail. A batch call stops at the first failing element and
// reports how many it did; that element fails (a delete of a missing key
// succeeds) and the call resumes after it, so one bad entry never fails
// the others.
func (t *Target) send(n int, del bool, sl *slabs, fail func(i int, err error)) {
	for i := 0; i < n; {
		if !t.batch {
			t.sendEach(i, n, del, sl, fail)
			return
		}
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
			t.sendEach(i, n, del, sl, fail)
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
			continue
		}
		if !(del && errors.Is(err, ebpf.ErrKeyNotExist)) {
			fail(i, t.entryErr(err))
		}
		i++
	}
}

// sendEach writes the entries from..n-1 in the slabs one syscall each
// (maps without batch calls, and batch calls the kernel refused whole).
func (t *Target) sendEach(from, n int, del bool, sl *slabs, fail func(i int, err error)) {
	ks, fvs := sl.ks, sl.vs*t.ncpu
	for i := from; i < n; i++ {
		key := sl.kb[i*ks : (i+1)*ks]
		var err error
		switch {
		case del && !t.isArr:
			if err = t.m.Delete(key); errors.Is(err, ebpf.ErrKeyNotExist) {
				err = nil
			}
		case t.ncpu > 1: // every CPU's copy (zeros for an array delete)
			err = t.m.Put(key, sl.vals.Slice(i*t.ncpu, (i+1)*t.ncpu).Interface())
		default:
			err = t.m.Put(key, sl.vb[i*fvs:(i+1)*fvs])
		}
		if err != nil {
			fail(i, t.entryErr(err))
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
// write goes through them a chunk at a time, and so does a read of a map
// too small for readBuffers' own. Buffers allocated
// per call cost the first full reconcile of 100,000 keys 25 fresh pairs,
// each page of them a page fault. A read's visit (readAll) must not
// write: both use the same buffers.
func (t *Target) buffers() *slabs {
	if t.buf == nil {
		t.buf = t.newSlabs(batchSize)
	}
	return t.buf
}

// newSlabs returns buffers for n keys and their values.
func (t *Target) newSlabs(n int) *slabs {
	keys, kb := byteSlab(int(t.s.spec.KeySize), n)
	vals, vb := byteSlab(int(t.s.spec.ValueSize), n*t.ncpu)
	return &slabs{ks: int(t.s.spec.KeySize), vs: int(t.s.spec.ValueSize), keys: reflect.ValueOf(keys), vals: reflect.ValueOf(vals),
		keysAny: keys, valsAny: vals, kb: kb, vb: vb}
}

// Interface guards.
var (
	_ node.Target  = (*Target)(nil)
	_ node.Chunked = (*Target)(nil)
)
