package ebpfmap

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/hashicorp/hcl/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

	"github.com/pipeline/pipeline/engine/node"
)

// Sink is a configured ebpf_map sink.
type Sink struct {
	address  string
	pin      string
	recreate bool
	spec     *ebpf.MapSpec
	key      *column
	value    *column
	ctx      *hcl.EvalContext // var, local and functions for from expressions
}

var (
	_ node.Sink   = (*Sink)(nil)
	_ node.Target = (*Target)(nil)
)

// batchSize bounds one batch syscall.
const batchSize = 4096

// Target is an open pinned map.
type Target struct {
	s      *Sink
	m      *ebpf.Map // nil in plan mode when the map does not exist
	env    node.Env
	met    targetMetrics
	batch  bool // batch syscalls work on this map
	zero   []byte
	isArr  bool
	health node.State
	// lastCount is the size of the last read, to size the next one.
	lastCount int
}

type targetMetrics struct {
	entries, ratio prometheus.Gauge
	batch          prometheus.Observer
	full           prometheus.Counter
}

// Open implements node.Sink.
func (s *Sink) Open(_ context.Context, env node.Env, mode node.Mode) (node.Target, error) {
	m, err := s.openMap(mode == node.ModePlan)
	if err != nil {
		return nil, err
	}
	t := &Target{s: s, m: m, env: env, batch: true, zero: make([]byte, s.spec.ValueSize), isArr: s.spec.Type == ebpf.Array}
	if mode == node.ModeRun {
		if err := t.registerMetrics(); err != nil {
			m.Close()
			return nil, err
		}
		env.Logger.Info("map open", "file", s.pin, "count", s.spec.MaxEntries)
	}
	return t, nil
}

func (t *Target) registerMetrics() error {
	t.met = targetMetrics{
		entries: prometheus.NewGauge(prometheus.GaugeOpts{Name: "pipeline_sink_map_entries", Help: "Entries in the BPF map, as last read or written."}),
		ratio:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "pipeline_sink_map_capacity_ratio", Help: "Entries divided by max_entries."}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "pipeline_sink_map_batch_size", Help: "Entries per batch syscall.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 8)}),
		full: prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_sink_map_full_total", Help: "Writes refused because the map was full."}),
	}
	for _, c := range []prometheus.Collector{t.met.entries, t.met.ratio, t.met.batch.(prometheus.Histogram), t.met.full} {
		if err := t.env.Metrics.Register(c); err != nil {
			return fmt.Errorf("register metrics: %w", err)
		}
	}
	return nil
}

// raw is an entry's encoded key and value.
type raw struct{ key, value []byte }

// Prepare implements node.Target: it encodes the record's key and value.
func (t *Target) Prepare(r node.Record) (node.Entry, error) {
	rec := cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(r.Key), "value": r.Value})
	k, err := t.s.key.build(t.s.ctx, rec)
	if err != nil {
		return node.Entry{}, fmt.Errorf("key: %w", err)
	}
	v, err := t.s.value.build(t.s.ctx, rec)
	if err != nil {
		return node.Entry{}, fmt.Errorf("value: %w", err)
	}
	return t.entry(k, v), nil
}

func (t *Target) entry(k, v []byte) node.Entry {
	return node.Entry{Key: t.s.key.enc.canonical(k), Value: cty.StringVal(hex.EncodeToString(v)), Raw: raw{k, v}}
}

// Actual implements node.Target: every entry of the map.
func (t *Target) Actual(ctx context.Context) ([]node.Entry, error) {
	if t.m == nil {
		return nil, nil
	}
	var out []node.Entry
	err := t.readAll(ctx, func(k, v []byte) {
		if out == nil { // sized by the last read: a map rarely changes much between reads
			out = make([]node.Entry, 0, max(t.lastCount+t.lastCount/8, 64))
		}
		if t.isArr && string(v) == string(t.zero) {
			return // an array slot holding zeros is an absent entry
		}
		out = append(out, t.entry(append([]byte(nil), k...), append([]byte(nil), v...)))
	})
	if err != nil {
		return nil, fmt.Errorf("read map %s: %w", t.s.pin, err)
	}
	t.setCount(len(out))
	t.lastCount = len(out)
	return out, nil
}

func (t *Target) setCount(n int) {
	if t.met.entries == nil {
		return
	}
	t.met.entries.Set(float64(n))
	t.met.ratio.Set(float64(n) / float64(t.s.spec.MaxEntries))
}

// readAll visits every key/value, with batch lookups where supported.
func (t *Target) readAll(ctx context.Context, visit func(k, v []byte)) error {
	ks, vs := int(t.s.spec.KeySize), int(t.s.spec.ValueSize)
	if t.batch {
		keys, kb := byteSlab(ks, batchSize)
		vals, vb := byteSlab(vs, batchSize)
		var cursor ebpf.MapBatchCursor
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			n, err := t.m.BatchLookup(&cursor, keys, vals, nil)
			for i := range n {
				visit(kb[i*ks:(i+1)*ks], vb[i*vs:(i+1)*vs])
			}
			if errors.Is(err, ebpf.ErrKeyNotExist) {
				return nil
			}
			if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.EINVAL) && n == 0 {
				t.batch = false
				break
			}
			if err != nil {
				return err
			}
		}
	}
	k, v := make([]byte, ks), make([]byte, vs)
	it := t.m.Iterate()
	for it.Next(&k, &v) {
		visit(k, v)
	}
	return it.Err()
}

// byteSlab returns a slice of n fixed-size byte arrays (what cilium/ebpf's
// batch calls expect) and a flat view of its memory.
func byteSlab(size, n int) (any, []byte) {
	sl := reflect.MakeSlice(reflect.SliceOf(reflect.ArrayOf(size, reflect.TypeFor[byte]())), n, n)
	return sl.Interface(), unsafe.Slice((*byte)(sl.UnsafePointer()), size*n)
}

// Close implements node.Target. The map stays pinned with its entries.
func (t *Target) Close() error {
	if t.m == nil {
		return nil
	}
	return t.m.Close()
}
