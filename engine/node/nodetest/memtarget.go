package nodetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// MemSink is a node.Sink whose target is an in-memory map. Tests read its
// state and write counters, and may inject failures.
type MemSink struct {
	mu      sync.Mutex
	state   map[node.Key]cty.Value
	updates int
	deletes int
	reads   int
	unknown int // entries ScanActual handed over: known did not recognise them
	actual  int // what the engine last said the target holds (node.Chunked.Count)
	// FailKey, when set, makes every write of that key fail.
	FailKey func(k node.Key) bool
	// RejectKey, when set, makes every write of that key fail with a
	// permanent answer (node.Rejected).
	RejectKey func(k node.Key) bool
	// Reject, when set, makes Prepare refuse a record.
	Reject func(r node.Record) error
	// AppendOnly makes Actual return node.ErrNoActualState.
	AppendOnly bool
	// FailActual, when set, makes Actual fail while it returns an error.
	FailActual func() error
	// BeforeUpdate, when set, is called at the start of every Update
	// (a test may block in it to hold a write in flight).
	BeforeUpdate func()
	// HealthyOnOpen makes Open report Healthy, as a sink whose connection
	// is up does before it has written anything.
	HealthyOnOpen bool
	// Encoded makes the target encode its entries (Data), show them
	// through node.Chunked and take writes of Data alone
	// (node.Chunked), as a BPF map does.
	Encoded bool
	// Document makes the target a node.Document: Update and Delete record
	// the round's changes and Commit applies them once the input synced.
	Document bool
	// prepared finds an Encoded target's entries by their Data, for
	// UpdateData and DeleteData; it keeps every entry ever prepared or
	// read (a test's few).
	prepared map[string]node.Entry
}

// NewMemSink returns an empty MemSink.
func NewMemSink() *MemSink { return &MemSink{state: map[node.Key]cty.Value{}} }

var (
	_ node.Sink   = (*MemSink)(nil)
	_ node.Target = (*memTarget)(nil)
)

// Count implements node.Chunked: it keeps the count of an Encoded
// target.
func (t *scanTarget) Count(n int) {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	t.m.actual = n
}

// ActualCount returns what the engine last reported an Encoded target
// holds (node.Chunked.Count).
func (m *MemSink) ActualCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.actual
}

// Open implements node.Sink.
func (m *MemSink) Open(_ context.Context, env node.Env, _ node.Mode) (node.Target, error) {
	if m.HealthyOnOpen && env.Health != nil {
		env.Health.Set(node.Healthy, "")
	}
	switch {
	case m.Encoded:
		return &scanTarget{memTarget{m}}, nil
	case m.Document:
		return &docTarget{memTarget: memTarget{m}, pend: map[node.Key]*cty.Value{}}, nil
	}
	return &memTarget{m}, nil
}

// docTarget is a Document MemSink's target: a document of every entry,
// written as a whole by Commit.
type docTarget struct {
	memTarget
	pend map[node.Key]*cty.Value // the round's changes; nil: deleted
}

var _ node.Document = (*docTarget)(nil)

// Update records batch for the next Commit.
func (t *docTarget) Update(_ context.Context, batch []node.Entry) {
	for _, e := range batch {
		t.pend[e.Key] = &e.Value
	}
}

// Delete records batch for the next Commit.
func (t *docTarget) Delete(_ context.Context, batch []node.Entry) {
	for _, e := range batch {
		t.pend[e.Key] = nil
	}
}

// Commit implements node.Document: once the input synced, it writes the
// round's changes (through memTarget, so FailKey fails them).
func (t *docTarget) Commit(ctx context.Context, r node.Round) []node.Entry {
	if !r.Synced {
		return nil
	}
	var up, del []node.Entry
	for k, v := range t.pend {
		if v == nil {
			del = append(del, node.Entry{Key: k})
		} else {
			up = append(up, node.Entry{Key: k, Value: *v})
		}
	}
	clear(t.pend)
	t.memTarget.Update(ctx, up)
	t.memTarget.Delete(ctx, del)
	var failed []node.Entry
	for _, e := range append(up, del...) {
		if e.Err != nil {
			failed = append(failed, e)
		}
	}
	return failed
}

// PlanFile implements node.Document: Changed says whether desired
// differs from the document.
func (t *docTarget) PlanFile(ctx context.Context, desired []node.Entry) (node.FilePlan, error) {
	actual, err := t.Actual(ctx)
	if err != nil {
		return node.FilePlan{}, err
	}
	same := len(actual) == len(desired)
	for _, a := range actual {
		i := slices.IndexFunc(desired, func(d node.Entry) bool { return d.Key == a.Key })
		same = same && i >= 0 && desired[i].Same(a)
	}
	return node.FilePlan{Path: "memory", Exists: true, Changed: !same}, nil
}

// State returns a copy of the target's entries.
func (m *MemSink) State() map[node.Key]cty.Value {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.state)
}

// Keys returns the sorted keys of the target.
func (m *MemSink) Keys() []node.Key {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.AppendSeq(make([]node.Key, 0, len(m.state)), maps.Keys(m.state))
	slices.Sort(out)
	return out
}

// Set writes an entry behind the engine's back (drift).
func (m *MemSink) Set(k node.Key, v cty.Value) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state[k] = v
}

// Remove deletes an entry behind the engine's back (drift).
func (m *MemSink) Remove(k node.Key) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.state, k)
}

// Counts returns the number of entries updated, deleted, and reads of the
// whole target (failed ones included).
func (m *MemSink) Counts() (updates, deletes, reads int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.updates, m.deletes, m.reads
}

// ResetCounts zeroes the counters.
func (m *MemSink) ResetCounts() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.updates, m.deletes, m.reads, m.unknown = 0, 0, 0, 0
}

// Unknown returns the number of entries an Encoded target's full reads
// handed over because the engine did not recognise their bytes
// (node.Chunked): entries it holds with the same bytes cost it
// nothing.
func (m *MemSink) Unknown() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.unknown
}

type memTarget struct{ m *MemSink }

var (
	errInjected = errors.New("injected failure")
	errRejected = errors.New("injected rejection")
)

func (t *memTarget) Prepare(r node.Record) (node.Entry, error) {
	if t.m.Reject != nil {
		if err := t.m.Reject(r); err != nil {
			return node.Entry{}, err
		}
	}
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	return t.entry(r.Key, r.Value), nil
}

// entry is the target's form of one entry: with Data when it encodes,
// which it then keeps in prepared. The caller holds m.mu.
func (t *memTarget) entry(k node.Key, v cty.Value) node.Entry {
	e := node.Entry{Key: k, Value: v}
	if t.m.Encoded {
		// Fixed-width bytes that identify the entry, as node.Chunked needs.
		sum := sha256.Sum256([]byte(k + "\x00" + v.GoString()))
		e.Data = sum[:16]
		if t.m.prepared == nil {
			t.m.prepared = map[string]node.Entry{}
		}
		t.m.prepared[string(e.Data)] = e
	}
	return e
}

func (t *memTarget) Actual(context.Context) ([]node.Entry, error) {
	m := t.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.AppendOnly {
		return nil, node.ErrNoActualState
	}
	m.reads++
	if m.FailActual != nil {
		if err := m.FailActual(); err != nil {
			return nil, err
		}
	}
	out := make([]node.Entry, 0, len(m.state))
	for k, v := range m.state {
		out = append(out, t.entry(k, v))
	}
	return out, nil
}

// scanTarget is an Encoded MemSink's target.
type scanTarget struct{ memTarget }

var _ node.Chunked = (*scanTarget)(nil)

// UpdateData implements node.Chunked: Update of the entries Prepare
// made with these Data.
func (t *scanTarget) UpdateData(ctx context.Context, data []byte, width int, errs []error) {
	t.byData(ctx, t.Update, data, width, errs)
}

// DeleteData implements node.Chunked: Delete of the entries prepared or
// read with these Data.
func (t *scanTarget) DeleteData(ctx context.Context, data []byte, width int, errs []error) {
	t.byData(ctx, t.Delete, data, width, errs)
}

// ValueOf implements node.Chunked: the Value of the entry prepared or
// read with Data d.
func (t *scanTarget) ValueOf(d []byte) cty.Value {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	return t.m.prepared[string(d)].Value
}

// byData writes with op the entries with the len(errs) Data in data,
// setting each one's outcome in errs; it fails those it never made.
func (t *scanTarget) byData(ctx context.Context, op func(context.Context, []node.Entry), data []byte, width int, errs []error) {
	batch := make([]node.Entry, 0, len(errs))
	at := make([]int, 0, len(errs))
	t.m.mu.Lock()
	for i := range errs {
		e, ok := t.m.prepared[string(data[i*width:(i+1)*width])]
		if !ok {
			errs[i] = errors.New("entry not prepared by this target")
			continue
		}
		errs[i] = nil
		batch, at = append(batch, e), append(at, i)
	}
	t.m.mu.Unlock()
	op(ctx, batch)
	for j, i := range at {
		errs[i] = batch[j].Err
	}
}

// ScanActual implements node.Chunked over Actual's entries, one entry per
// chunk.
func (t *scanTarget) ScanActual(ctx context.Context, known func(data []byte, width int, known []bool), add func(node.Entry)) error {
	es, err := t.Actual(ctx)
	if err != nil {
		return err
	}
	var seen [1]bool
	for _, e := range es {
		if seen[0] = false; known != nil {
			known(e.Data, len(e.Data), seen[:])
		}
		if !seen[0] {
			t.m.mu.Lock()
			t.m.unknown++
			t.m.mu.Unlock()
			add(e)
		}
	}
	return nil
}

func (t *memTarget) Update(_ context.Context, batch []node.Entry) {
	if t.m.BeforeUpdate != nil {
		t.m.BeforeUpdate()
	}
	t.write(batch, func(e node.Entry) {
		t.m.updates++
		t.m.state[e.Key] = e.Value
	})
}

func (t *memTarget) Delete(_ context.Context, batch []node.Entry) {
	t.write(batch, func(e node.Entry) {
		t.m.deletes++
		delete(t.m.state, e.Key)
	})
}

// write applies op under m.mu to every entry of batch whose key FailKey
// lets through, and fails the others.
func (t *memTarget) write(batch []node.Entry, op func(node.Entry)) {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	for i := range batch {
		if t.m.FailKey != nil && t.m.FailKey(batch[i].Key) {
			batch[i].Err = errInjected
			continue
		}
		if t.m.RejectKey != nil && t.m.RejectKey(batch[i].Key) {
			batch[i].Err = node.Rejected(errRejected)
			continue
		}
		op(batch[i])
	}
}

func (t *memTarget) Close() error { return nil }

// Has reports whether the target holds k with a value for which match holds.
func (m *MemSink) Has(k node.Key, match func(cty.Value) bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.state[k]
	return ok && match(v)
}
