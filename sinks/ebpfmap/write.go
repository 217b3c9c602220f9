package ebpfmap

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/cilium/ebpf"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

	"github.com/pipeline/pipeline/engine/node"
)

// build evaluates the column's expressions for one record and encodes them.
func (c *column) build(parent *hcl.EvalContext, rec cty.Value) ([]byte, error) {
	ctx := parent.NewChild()
	ctx.Variables = map[string]cty.Value{"record": rec}
	b := make([]byte, c.enc.size)
	if c.enc.name != "struct" {
		v, diags := c.from.Value(ctx)
		if diags.HasErrors() {
			return nil, diags
		}
		return b, c.enc.encode(v, b)
	}
	for i, f := range c.enc.fields {
		v, diags := c.fields[i].Value(ctx)
		if diags.HasErrors() {
			return nil, fmt.Errorf("field %s: %w", f.name, diags)
		}
		if err := f.enc.encode(v, b[f.offset:f.offset+f.enc.size]); err != nil {
			return nil, fmt.Errorf("field %s: %w", f.name, err)
		}
	}
	return b, nil
}

// Update implements node.Target. Entries that fail get Err; the others are
// written, in batches where the map supports them.
func (t *Target) Update(ctx context.Context, batch []node.Entry) {
	t.write(ctx, batch, false)
}

// Delete implements node.Target. Deleting a missing key succeeds. In an
// array map a delete writes a zero value.
func (t *Target) Delete(ctx context.Context, batch []node.Entry) {
	if t.isArr {
		for i := range batch {
			if r, ok := batch[i].Raw.(raw); ok {
				batch[i].Raw = raw{key: r.key} // nil value: write zeros
			}
		}
	}
	t.write(ctx, batch, !t.isArr)
}

func (t *Target) write(ctx context.Context, batch []node.Entry, del bool) {
	if t.m == nil {
		for i := range batch {
			batch[i].Err = errors.New("map not open for writing (plan mode)")
		}
		return
	}
	full := false
	slab := newSlabs(int(t.s.spec.KeySize), int(t.s.spec.ValueSize), min(len(batch), batchSize))
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
			if _, ok := chunk[i].Raw.(raw); !ok {
				chunk[i].Err = fmt.Errorf("entry %s was not prepared by this target", chunk[i].Key)
				prepared = false
			}
		}
		if t.batch && prepared {
			t.writeBatch(chunk, del, slab)
		} else {
			t.writeEach(chunk, del)
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

// entryErr wraps a kernel error for one entry, naming the map.
func (t *Target) entryErr(err error) error {
	if isFull(err) {
		if t.met.full != nil {
			t.met.full.Inc()
		}
		return fmt.Errorf("map %s is full (max_entries %d): %w", t.s.pin, t.s.spec.MaxEntries, err)
	}
	return fmt.Errorf("map %s: %w", t.s.pin, explain(err))
}

// writeBatch writes chunk with batch syscalls. A batch call stops at the
// first failing element and reports how many it did; that element gets the
// error (a delete of a missing key succeeds) and the call resumes after it.
func (t *Target) writeBatch(chunk []node.Entry, del bool, sl *slabs) {
	ks, vs := sl.ks, sl.vs
	keys, kb := sl.keys.Slice(0, len(chunk)).Interface(), sl.kb
	vals, vb := sl.vals.Slice(0, len(chunk)).Interface(), sl.vb
	for i, e := range chunk {
		r, _ := e.Raw.(raw)
		copy(kb[i*ks:], r.key)
		if !del {
			v := r.value
			if t.isArr && v == nil {
				v = t.zero
			}
			copy(vb[i*vs:], v)
		}
	}
	kv, vv := reflect.ValueOf(keys), reflect.ValueOf(vals)
	clear(vb[len(chunk)*vs:]) // a reused slab may hold a longer previous chunk
	for i := 0; i < len(chunk); {
		var n int
		var err error
		if del {
			n, err = t.m.BatchDelete(kv.Slice(i, len(chunk)).Interface(), nil)
		} else {
			n, err = t.m.BatchUpdate(kv.Slice(i, len(chunk)).Interface(), vv.Slice(i, len(chunk)).Interface(), nil)
		}
		if t.met.batch != nil && n > 0 {
			t.met.batch.Observe(float64(n))
		}
		i += n
		if err == nil || i >= len(chunk) {
			return
		}
		if errors.Is(err, ebpf.ErrNotSupported) {
			t.batch = false
			t.writeEach(chunk[i:], del)
			return
		}
		if !(del && errors.Is(err, ebpf.ErrKeyNotExist)) {
			chunk[i].Err = t.entryErr(err)
		}
		i++
	}
}

// writeEach writes entries one syscall each (maps without batch support).
func (t *Target) writeEach(chunk []node.Entry, del bool) {
	for i := range chunk {
		r, ok := chunk[i].Raw.(raw)
		if !ok {
			continue
		}
		var err error
		switch {
		case del:
			if err = t.m.Delete(r.key); errors.Is(err, ebpf.ErrKeyNotExist) {
				err = nil
			}
		case t.isArr && r.value == nil:
			err = t.m.Put(r.key, t.zero)
		default:
			err = t.m.Put(r.key, r.value)
		}
		if err != nil {
			chunk[i].Err = t.entryErr(err)
		}
	}
}

// slabs are the key and value buffers of batch syscalls, allocated once per
// write and reused for every chunk.
type slabs struct {
	ks, vs     int
	keys, vals reflect.Value
	kb, vb     []byte
}

func newSlabs(ks, vs, n int) *slabs {
	keys, kb := byteSlab(ks, n)
	vals, vb := byteSlab(vs, n)
	return &slabs{ks: ks, vs: vs, keys: reflect.ValueOf(keys), vals: reflect.ValueOf(vals), kb: kb, vb: vb}
}
