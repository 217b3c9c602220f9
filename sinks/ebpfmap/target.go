package ebpfmap

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/hashicorp/hcl/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// Sink is a configured ebpf_map sink. It holds no kernel object: Open does.
type Sink struct {
	address  string
	pin      string
	recreate bool
	spec     *ebpf.MapSpec
	key      *column
	value    *column
	ctx      *hcl.EvalContext // var, local and functions for from expressions
	pinRange hcl.Range        // for Claims
}

// batchSize bounds one batch syscall.
const batchSize = 4096

// Target is an open pinned map. Its methods are called from one goroutine
// (the engine's sink loop), as node.Target requires.
type Target struct {
	s     *Sink
	m     *ebpf.Map // nil in plan mode when the map does not exist
	plan  bool      // opened read-only for plan: writes are refused
	env   node.Env
	met   targetMetrics
	batch bool // batch syscalls work on this map
	// ncpu is how many copies of a value the kernel holds: the possible
	// CPUs for a per-CPU map, else 1.
	ncpu   int
	zero   []byte // one value of zeros
	isArr  bool   // array or percpu_array: every index exists, zero means absent
	health node.State
	// lastCount is the size of the last read, to size the next one.
	lastCount int
	lock      *os.File // held while open in run mode (pinguard.go)
	idLock    *os.File // the lock on m's map ID, held with lock (pinguard.go)
	// lost is why the pin no longer names m, when a check found it naming
	// a map this sink cannot write: writes are refused until it does.
	lost error
	// replaced is why on_mismatch = "recreate" replaces (replaced) the
	// pinned map; "" when it does not.
	replaced string
	pinFile  os.FileInfo // the pin as the last full check found it naming m (checkPin)
	// shown holds the shown form (hex) of value bytes Prepare met, so
	// entries with equal values share one (at most maxCachedValues).
	shownMu sync.Mutex
	shown   map[string]cty.Value
	buf     *slabs // batch buffers (buffers)
	rbuf    *slabs // a full read's, when larger (readBuffers)
}

type targetMetrics struct {
	entries, ratio prometheus.Gauge
	batch          prometheus.Observer
	full           prometheus.Counter
}

// Open implements node.Sink. In ModePlan it opens an existing map
// read-only and creates nothing.
func (s *Sink) Open(_ context.Context, env node.Env, mode node.Mode) (node.Target, error) {
	t := s.newTarget(env, mode == node.ModePlan)
	if perCPU(s.spec.Type) {
		n, err := ebpf.PossibleCPU()
		if err != nil {
			return nil, fmt.Errorf("open map %s: count possible CPUs: %w", s.pin, err)
		}
		t.ncpu = n
	}
	if mode == node.ModeRun {
		lock, err := lockPin(s.pin)
		if err != nil {
			return nil, err
		}
		t.lock = lock
	}
	m, replaced, err := s.openMap(mode == node.ModePlan)
	if err != nil {
		t.unlock()
		return nil, err
	}
	t.m, t.replaced = m, replaced
	if replaced != "" && mode == node.ModeRun {
		t.noteReplaced(env)
	}
	if mode == node.ModeRun {
		if err := t.lockMap(m); err != nil {
			m.Close()
			t.unlock()
			return nil, err
		}
		if err := t.registerMetrics(); err != nil {
			m.Close()
			t.unlock()
			return nil, err
		}
		env.Logger.Info("map open", "pin", s.pin, "type", s.spec.Type.String(), "max_entries", s.spec.MaxEntries)
	}
	return t, nil
}

// newTarget is a Target with no map yet: Open adds the map, Encoder uses it as is.
func (s *Sink) newTarget(env node.Env, plan bool) *Target {
	return &Target{s: s, env: env, batch: true, ncpu: 1, plan: plan, zero: make([]byte, s.spec.ValueSize),
		isArr: s.spec.Type == ebpf.Array || s.spec.Type == ebpf.PerCPUArray}
}

func (t *Target) registerMetrics() error {
	t.met = targetMetrics{
		entries: prometheus.NewGauge(prometheus.GaugeOpts{Name: "pipeline_sink_map_entries", Help: "Entries in the BPF map at the last full read."}),
		ratio:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "pipeline_sink_map_capacity_ratio", Help: "Entries divided by max_entries at the last full read."}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "pipeline_sink_map_batch_size", Help: "Entries written or deleted per batch syscall.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 8)}),
		full: prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_sink_map_full_total", Help: "Entry writes refused because the map was full."}),
	}
	for _, c := range []prometheus.Collector{t.met.entries, t.met.ratio, t.met.batch.(prometheus.Histogram), t.met.full} {
		if err := t.env.Metrics.Register(c); err != nil {
			return fmt.Errorf("open map %s: register metrics: %w", t.s.pin, err)
		}
	}
	return nil
}

// An entry's Data is its encoded key followed by its encoded value (one
// CPU's copy), in one allocation, so writing a batch touches one small
// object per entry.

// prepared reports whether e carries this target's encoding.
func (t *Target) prepared(e node.Entry) bool {
	return len(e.Data) == int(t.s.spec.KeySize)+int(t.s.spec.ValueSize)
}

// split returns the encoded key and value of a prepared entry.
func (t *Target) split(e node.Entry) (key, value []byte) {
	ks := int(t.s.spec.KeySize)
	return e.Data[:ks:ks], e.Data[ks:]
}

// Prepare implements node.Target: it encodes the record's key and value.
// It does no I/O.
func (t *Target) Prepare(rec node.Record) (node.Entry, error) {
	var ctx *hcl.EvalContext
	recordCtx := func() *hcl.EvalContext {
		if ctx == nil {
			ctx = t.s.ctx.NewChild()
			ctx.Variables = map[string]cty.Value{"record": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(rec.Key), "value": rec.Value})}
		}
		return ctx
	}
	ks := int(t.s.spec.KeySize)
	data := make([]byte, ks+int(t.s.spec.ValueSize))
	k, v := data[:ks:ks], data[ks:]
	if sensitive, err := t.s.key.encodeInto(rec, recordCtx, k); err != nil {
		return node.Entry{}, fmt.Errorf("key: %w", err)
	} else if sensitive {
		// The key is shown (logs, status, plan) as the entry's identity.
		return node.Entry{}, errors.New("key: computed from a sensitive value; keys are shown in logs and status, so use the sensitive value in the map's value")
	}
	if t.isArr {
		if i := binary.NativeEndian.Uint32(k); i >= t.s.spec.MaxEntries {
			return node.Entry{}, fmt.Errorf("key: index %d is outside the array (max_entries %d)", i, t.s.spec.MaxEntries)
		}
	}
	sensitive, err := t.s.value.encodeInto(rec, recordCtx, v)
	if err != nil {
		return node.Entry{}, fmt.Errorf("value: %w", err)
	}
	var shown cty.Value
	if sensitive {
		shown = schema.MarkSensitive(hexValue(v)) // its bytes are the secret's: views mask them
	} else {
		shown = t.shownValue(v)
	}
	// The record key is usually the canonical form already (10.0.0.7):
	// then the entry shares its string.
	var buf [64]byte
	key := rec.Key
	if c := t.s.key.enc.appendCanonical(buf[:0], k); string(c) != key {
		key = string(c)
	}
	return node.Entry{Key: key, Value: shown, Data: data}, nil
}

// shownValue is the shown form of value bytes v, shared by equal values.
func (t *Target) shownValue(v []byte) cty.Value {
	t.shownMu.Lock()
	defer t.shownMu.Unlock()
	if c, ok := t.shown[string(v)]; ok {
		return c
	}
	c := hexValue(v)
	if t.shown == nil {
		t.shown = map[string]cty.Value{}
	}
	if len(t.shown) < maxCachedValues {
		t.shown[string(v)] = c
	}
	return c
}

// Actual implements node.Target: every entry of the map, read with batch
// lookups where the kernel has them. An array slot of zeros is absent.
func (t *Target) Actual(ctx context.Context) ([]node.Entry, error) {
	var out []node.Entry
	add := func(e node.Entry) {
		if out == nil { // sized by the last read: a map rarely changes much between reads
			out = make([]node.Entry, 0, max(t.lastCount+t.lastCount/8, 64))
		}
		out = append(out, e)
	}
	if err := t.ScanActual(ctx, nil, add); err != nil {
		return nil, err
	}
	return out, nil
}

// ScanActual implements node.Chunked: a full read that builds no entry
// for a key the engine holds with the same bytes (known); Actual is the
// read that knows none.
func (t *Target) ScanActual(ctx context.Context, known func(data []byte, width int, known []bool), add func(node.Entry)) error {
	if t.m == nil {
		return nil
	}
	if err := t.checkPin(); err != nil {
		return err
	}
	r := &reader{t: t}
	if err := t.readAll(ctx, func(n int, keys, vals []byte) { r.scan(n, keys, vals, known, add) }); err != nil {
		return fmt.Errorf("read map %s: %w", t.s.pin, err)
	}
	t.setCount(r.count)
	t.lastCount = r.count
	return nil
}

// Count implements node.Chunked: it takes the engine's count of the
// entries the map holds after each round (a hash map cannot be counted
// without reading it whole). The next full read sizes its result by it.
func (t *Target) Count(n int) {
	t.setCount(n)
	t.lastCount = n
}

func (t *Target) setCount(n int) {
	if t.met.entries == nil {
		return
	}
	t.met.entries.Set(float64(n))
	t.met.ratio.Set(float64(n) / float64(t.s.spec.MaxEntries))
}

// maxReadBytes bounds the buffers of a full read's batch lookups: 4 MB,
// a whole map of 500,000 IPv4 keys and u32 values.
const maxReadBytes = 4 << 20

// readBuffers returns the buffers of a full read's batch lookups, with
// room for the whole map as the last count says, and an eighth more:
// the kernel reads the map in one call, as the raw floor does, instead
// of stopping every batchSize entries for the engine's work on them
// (which pushed the kernel's part of the map out of the caches between
// calls), and the engine gets the entries in one chunk. At least
// batchSize entries, at most maxReadBytes; the buffers are kept while
// the map stays about that size.
func (t *Target) readBuffers() *slabs {
	ks, vs := int(t.s.spec.KeySize), int(t.s.spec.ValueSize)*t.ncpu
	n := min(t.lastCount+t.lastCount/8, maxReadBytes/(ks+vs))
	if n <= batchSize {
		t.rbuf = nil
		return t.buffers()
	}
	if t.rbuf == nil || len(t.rbuf.kb)/ks < n || len(t.rbuf.kb)/ks > 2*n {
		t.rbuf = t.newSlabs(n)
	}
	return t.rbuf
}

// readAll passes every key and value to visit, a chunk at a time: n keys
// in keys and n*ncpu values in vals, valid only during the call. It uses
// batch lookups where supported, else iterates.
func (t *Target) readAll(ctx context.Context, visit func(n int, keys, vals []byte)) error {
	ks, vs := int(t.s.spec.KeySize), int(t.s.spec.ValueSize)
	if t.batch {
		sl := t.readBuffers()
		keys, kb, vals, vb := sl.keysAny, sl.kb, sl.valsAny, sl.vb
		var cursor ebpf.MapBatchCursor
		for first := true; ; first = false {
			if err := ctx.Err(); err != nil {
				return err
			}
			n, err := t.m.BatchLookup(&cursor, keys, vals, nil)
			if n > 0 {
				visit(n, kb[:n*ks], vb[:n*vs*t.ncpu])
			}
			if errors.Is(err, ebpf.ErrKeyNotExist) {
				return nil
			}
			if first && n == 0 && (errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.EINVAL)) {
				t.batch = false
				break
			}
			if err != nil {
				return err
			}
		}
	}
	k := make([]byte, ks)
	vals, vb := byteSlab(vs, t.ncpu)
	it := t.m.Iterate()
	for i := 0; ; i++ {
		var ok bool
		if t.ncpu > 1 {
			ok = it.Next(&k, vals)
		} else {
			ok = it.Next(&k, &vb)
		}
		if !ok {
			break
		}
		if i%batchSize == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		visit(1, k, vb)
	}
	return it.Err()
}

func perCPU(t ebpf.MapType) bool {
	return t == ebpf.PerCPUHash || t == ebpf.PerCPUArray || t == ebpf.LRUCPUHash
}

// Close implements node.Target. The map stays pinned with its entries.
func (t *Target) Close() error {
	t.unlock()
	if t.m == nil {
		return nil
	}
	if err := t.m.Close(); err != nil {
		return fmt.Errorf("close map %s: %w", t.s.pin, err)
	}
	return nil
}

// Interface guards.
var (
	_ node.Sink      = (*Sink)(nil)
	_ node.Target    = (*Target)(nil)
	_ node.KeyReader = (*Target)(nil)
)
