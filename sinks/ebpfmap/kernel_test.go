package ebpfmap

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

const u8Value = "value {\n type = \"u8\"\n from = 1\n}"

// TestPerCPU writes through the target into every per-CPU type: each CPU
// holds the value, Actual reads it back as one value, and a CPU edited by
// hand shows as a different value that Update repairs.
func TestPerCPU(t *testing.T) {
	dir := requireBPF(t)
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ mapType, key, record string }{
		{"percpu_hash", `type = "ipv4"`, "10.0.0.1"},
		{"lru_percpu_hash", `type = "ipv4"`, "10.0.0.1"},
		{"percpu_array", "type = \"u32\"\nfrom = 3", "x"},
	} {
		for _, batch := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s batch=%v", tc.mapType, batch), func(t *testing.T) {
				pin := fmt.Sprintf("%s/%s-%v", dir, tc.mapType, batch)
				tg, _ := open(t, fmt.Sprintf("pin = %q\ntype = %q\nmax_entries = 8\nkey {\n%s\n}\nvalue {\n type = \"u32\"\n from = 9\n}", pin, tc.mapType, tc.key))
				tg.batch = batch
				es := put(t, tg, rec(tc.record, cty.EmptyObjectVal))
				if es[0].Err != nil {
					t.Fatal(es[0].Err)
				}
				key, _ := tg.split(es[0])
				got := make([]uint32, ncpu)
				if err := tg.m.Lookup(key, got); err != nil {
					t.Fatal(err)
				}
				want := slicesOf(uint32(9), ncpu)
				if d := cmp.Diff(want, got); d != "" {
					t.Fatalf("per-CPU values (-want +got):\n%s", d)
				}
				checkActual(t, tg, es[0].Key, es[0].Value)
				if ncpu > 1 {
					got[ncpu-1] = 5
					if err := tg.m.Put(key, got); err != nil {
						t.Fatal(err)
					}
					a, _ := tg.Actual(context.Background())
					if len(a) != 1 || a[0].Value.RawEquals(es[0].Value) {
						t.Fatalf("a CPU holding another value must show as drift: %v", a)
					}
					checkScan(t, tg)
					var drift []node.Entry
					err := tg.ScanActual(context.Background(), knownEach(func(data []byte) bool { return bytes.Equal(data, es[0].Data) }),
						func(e node.Entry) { drift = append(drift, e) })
					if err != nil || len(drift) != 1 {
						t.Fatalf("ScanActual knowing the written entry must hand over the drifted one: %v, %v", drift, err)
					}
					put(t, tg, rec(tc.record, cty.EmptyObjectVal))
					checkActual(t, tg, es[0].Key, es[0].Value)
				}
				tg.Delete(context.Background(), es)
				if a, _ := tg.Actual(context.Background()); len(a) != 0 || es[0].Err != nil {
					t.Fatalf("after delete: %v, %v", a, es[0].Err)
				}
				if e, ok, err := tg.ReadEntry(context.Background(), es[0]); ok || err != nil {
					t.Fatalf("ReadEntry after delete: %v, %v, %v", e, ok, err)
				}
			})
		}
	}
}

// knownEach is a ScanActual known func that asks f about one entry at a
// time.
func knownEach(f func(data []byte) bool) func(data []byte, width int, known []bool) {
	return func(data []byte, width int, known []bool) {
		for i := range known {
			known[i] = f(data[i*width : (i+1)*width])
		}
	}
}

func slicesOf[T any](v T, n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func checkActual(t *testing.T, tg *Target, key string, value cty.Value) {
	t.Helper()
	a, err := tg.Actual(context.Background())
	if err != nil || len(a) != 1 || a[0].Key != key || !a[0].Value.RawEquals(value) {
		t.Fatalf("Actual = %v, %v; want one entry %s = %#v", a, err, key, value)
	}
	checkScan(t, tg)
}

// checkScan checks ScanActual and ReadEntry against Actual: knowing
// nothing, ScanActual hands over the entries Actual reads; knowing each by
// its bytes, none; ReadEntry of each reads it as Actual does. Each entry's
// Data identifies its key, as node.Chunked requires.
func checkScan(t *testing.T, tg *Target) {
	t.Helper()
	actual, err := tg.Actual(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byKey, byData := map[string]node.Entry{}, map[string]bool{}
	for _, e := range actual {
		byKey[e.Key], byData[string(e.Data)] = e, true
	}
	if len(byData) != len(actual) {
		t.Fatalf("%d entries read share %d Data: Data must identify the key", len(actual), len(byData))
	}
	for _, a := range actual {
		e, ok, err := tg.ReadEntry(context.Background(), a)
		if err != nil || !ok || e.Key != a.Key || !e.Value.RawEquals(a.Value) || !bytes.Equal(e.Data, a.Data) {
			t.Fatalf("ReadEntry(%s) = %s %#v %x, %v, %v; Actual read %#v %x", a.Key, e.Key, e.Value, e.Data, ok, err, a.Value, a.Data)
		}
	}
	var added []node.Entry
	add := func(e node.Entry) { added = append(added, e) }
	if err := tg.ScanActual(context.Background(), knownEach(func([]byte) bool { return false }), add); err != nil {
		t.Fatal(err)
	}
	if len(added) != len(actual) {
		t.Fatalf("ScanActual knowing nothing handed over %d entries, Actual read %d", len(added), len(actual))
	}
	for _, e := range added {
		a, ok := byKey[e.Key]
		if !ok || !a.Value.RawEquals(e.Value) || !bytes.Equal(a.Data, e.Data) {
			t.Fatalf("ScanActual handed over %s = %#v %x; Actual read %#v %x", e.Key, e.Value, e.Data, a.Value, a.Data)
		}
	}
	added = nil
	known := knownEach(func(data []byte) bool { return byData[string(data)] })
	if err := tg.ScanActual(context.Background(), known, add); err != nil {
		t.Fatal(err)
	}
	for _, e := range added { // only entries whose CPUs disagree differ from any one copy
		if a := byKey[e.Key]; len(a.Data) == int(tg.s.spec.KeySize)+int(tg.s.spec.ValueSize) {
			t.Fatalf("ScanActual knowing every entry handed over %s", e.Key)
		}
	}
}

// TestWithoutBatchSyscalls runs the per-key fallbacks (iterate, Put,
// Delete) that maps without batch support use.
func TestWithoutBatchSyscalls(t *testing.T) {
	dir := requireBPF(t)
	for _, mapType := range []string{"hash", "array"} {
		t.Run(mapType, func(t *testing.T) {
			key := `type = "ip"`
			if mapType == "array" {
				key = "type = \"u32\"\nfrom = record.value.i"
			}
			tg, _ := open(t, fmt.Sprintf("pin = %q\ntype = %q\nmax_entries = 8\nkey {\n%s\n}\n%s", dir+"/nb-"+mapType, mapType, key, u8Value))
			tg.batch = false
			var recs []node.Record
			for i := range 3 {
				recs = append(recs, rec(fmt.Sprint("10.0.0.", i), cty.ObjectVal(map[string]cty.Value{"i": cty.NumberIntVal(int64(i))})))
			}
			es := put(t, tg, recs...)
			if a, err := tg.Actual(context.Background()); err != nil || len(a) != 3 {
				t.Fatalf("Actual = %v, %v", a, err)
			}
			tg.Delete(context.Background(), es[:2])
			tg.Delete(context.Background(), es[:2]) // missing keys succeed
			for _, e := range es {
				if e.Err != nil {
					t.Fatal(e.Err)
				}
			}
			checkActual(t, tg, es[2].Key, es[2].Value)
		})
	}
}

// TestBatchPartialFailure: an entry the kernel refuses in the middle of a
// batch fails alone; the entries after it are written.
func TestBatchPartialFailure(t *testing.T) {
	dir := requireBPF(t)
	tg, _ := open(t, fmt.Sprintf("pin = %q\ntype = \"lpm_trie\"\nkey { type = \"ipv4_prefix\" }\n%s", dir+"/partial", u8Value))
	es := make([]node.Entry, 0, 5)
	for i := range 5 {
		e, err := tg.Prepare(rec(fmt.Sprintf("10.%d.0.0/16", i), cty.EmptyObjectVal))
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	badKey, _ := tg.split(es[2])
	binary.NativeEndian.PutUint32(badKey, 40) // prefix length beyond an IPv4 address: EINVAL
	tg.Update(context.Background(), es)
	for i, e := range es {
		if (e.Err != nil) != (i == 2) {
			t.Fatalf("entry %d (%s): err %v; want only entry 2 to fail", i, e.Key, e.Err)
		}
	}
	if !strings.Contains(es[2].Err.Error(), dir+"/partial") {
		t.Fatalf("error does not name the map: %v", es[2].Err)
	}
	if a, _ := tg.Actual(context.Background()); len(a) != 4 {
		t.Fatalf("want the 4 good entries written, map holds %v", a)
	}
}

// TestPlanModeOnExistingMap: plan reads a present map read-only and never
// writes it.
func TestPlanModeOnExistingMap(t *testing.T) {
	dir := requireBPF(t)
	body := fmt.Sprintf("input = transform.extract.ips\npin = %q\nkey { type = \"ipv4\" }\n%s", dir+"/plan", u8Value)
	tg, _ := open(t, strings.TrimPrefix(body, "input = transform.extract.ips\n"))
	if a, err := tg.Actual(context.Background()); err != nil || len(a) != 0 {
		t.Fatalf("Actual of an empty map = %v, %v", a, err)
	}
	put(t, tg, rec("10.0.0.1", cty.EmptyObjectVal))
	s := nodetest.MustBuild(t, Spec(), body, records).Sink.(*Sink)
	env, _ := nodetest.Env(t, nil)
	pt, err := s.Open(context.Background(), env, node.ModePlan)
	if err != nil {
		t.Fatal(err)
	}
	defer pt.Close()
	if a, err := pt.Actual(context.Background()); err != nil || len(a) != 1 || a[0].Key != "10.0.0.1" {
		t.Fatalf("plan Actual = %v, %v", a, err)
	}
	e, _ := pt.Prepare(rec("10.0.0.2", cty.EmptyObjectVal))
	batch := []node.Entry{e}
	pt.Update(context.Background(), batch)
	if batch[0].Err == nil {
		t.Fatal("a plan-mode target wrote the map")
	}
	if a, _ := tg.Actual(context.Background()); len(a) != 1 {
		t.Fatalf("map changed by plan: %v", a)
	}
}

// TestMapFlags: declared flags reach the kernel, and a pinned map created
// with other flags is a mismatch that names them.
func TestMapFlags(t *testing.T) {
	dir := requireBPF(t)
	pin := dir + "/flags"
	body := func(flags string) string {
		return fmt.Sprintf("pin = %q\ntype = \"lru_hash\"\nmap_flags = %s\nkey { type = \"ipv4\" }\n%s", pin, flags, u8Value)
	}
	tg, _ := open(t, body(`["no_common_lru", "rdonly_prog"]`))
	if got, want := tg.m.Flags(), uint32(1<<1|1<<7); got != want {
		t.Fatalf("flags %#x, want %#x", got, want)
	}
	tg.Close()
	s := nodetest.MustBuild(t, Spec(), "input = transform.extract.ips\n"+body(`[]`), records).Sink.(*Sink)
	env, _ := nodetest.Env(t, nil)
	if _, err := s.Open(context.Background(), env, node.ModeRun); err == nil || !strings.Contains(err.Error(), "flags is 130, declared 0") {
		t.Fatalf("flag mismatch error = %v", err)
	}
}

// TestArrayIndexOutOfRange: Prepare refuses an index the array does not
// have, instead of the kernel's E2BIG looking like a full map.
func TestArrayIndexOutOfRange(t *testing.T) {
	dir := requireBPF(t)
	tg, _ := open(t, fmt.Sprintf("pin = %q\ntype = \"array\"\nmax_entries = 4\nkey {\n type = \"u32\"\n from = record.value.i\n}\n%s", dir+"/arr", u8Value))
	_, err := tg.Prepare(rec("x", cty.ObjectVal(map[string]cty.Value{"i": cty.NumberIntVal(4)})))
	if err == nil || !strings.Contains(err.Error(), "outside the array (max_entries 4)") {
		t.Fatalf("Prepare(index 4) = %v", err)
	}
}

// TestMetrics: entries and capacity follow the last read, batch sizes are
// observed, and refused writes of a full map are counted.
func TestMetrics(t *testing.T) {
	dir := requireBPF(t)
	reg := prometheus.NewRegistry()
	s := nodetest.MustBuild(t, Spec(), fmt.Sprintf("input = transform.extract.ips\npin = %q\nmax_entries = 4\nkey { type = \"ipv4\" }\n%s", dir+"/met", u8Value), records).Sink.(*Sink)
	env, _ := nodetest.Env(t, reg)
	tg0, err := s.Open(context.Background(), env, node.ModeRun)
	if err != nil {
		t.Fatal(err)
	}
	tg := tg0.(*Target)
	defer tg.Close()
	var recs []node.Record
	for i := range 5 {
		recs = append(recs, rec(fmt.Sprint("10.0.0.", i), cty.EmptyObjectVal))
	}
	put(t, tg, recs...)
	if _, err := tg.Actual(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		switch {
		case m.Gauge != nil:
			got[mf.GetName()] = m.Gauge.GetValue()
		case m.Counter != nil:
			got[mf.GetName()] = m.Counter.GetValue()
		case m.Histogram != nil:
			got[mf.GetName()] = m.Histogram.GetSampleSum()
		}
	}
	want := map[string]float64{"pipeline_sink_map_entries": 4, "pipeline_sink_map_capacity_ratio": 1,
		"pipeline_sink_map_full_total": 1, "pipeline_sink_map_batch_size": 4}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("metrics (-want +got):\n%s", d)
	}
}

// TestStructKey: a struct key with padding renders as name=value pairs and
// round-trips through the map.
func TestStructKey(t *testing.T) {
	dir := requireBPF(t)
	tg, _ := open(t, fmt.Sprintf(`pin = %q
key {
  type = "struct"
  field "proto" {
    type = "u8"
    from = record.value.proto
  }
  field "port" {
    type       = "u16"
    byte_order = "be"
    from       = record.value.port
  }
  field "addr" {
    type = "ipv4"
    from = record.value.ip
  }
}
%s`, dir+"/sk", u8Value))
	es := put(t, tg, rec("web", cty.ObjectVal(map[string]cty.Value{"proto": cty.NumberIntVal(6), "port": cty.NumberIntVal(443), "ip": cty.StringVal("10.0.0.7")})))
	// struct { __u8 proto; __be16 port; __u32 addr; }: proto at 0, port at 2, addr at 4.
	wantKey := []byte{6, 0, 0x01, 0xbb, 10, 0, 0, 7}
	if k, _ := tg.split(es[0]); !bytes.Equal(k, wantKey) {
		t.Fatalf("key bytes %x, want %x", k, wantKey)
	}
	if es[0].Key != "proto=6,port=443,addr=10.0.0.7" {
		t.Fatalf("canonical key %q", es[0].Key)
	}
	checkActual(t, tg, es[0].Key, es[0].Value)
}

// TestBatchRefusedWhole: a batch call the kernel refuses before looking at
// any element (here EPERM on a read-only descriptor) leaves the count as
// requested; every entry must still get its own error, none may pass as
// written.
func TestBatchRefusedWhole(t *testing.T) {
	dir := requireBPF(t)
	pin := dir + "/ro"
	tg, _ := open(t, fmt.Sprintf("pin = %q\nkey { type = \"ipv4\" }\n%s", pin, u8Value))
	ro, err := ebpf.LoadPinnedMap(pin, &ebpf.LoadPinOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	rw := tg.m
	tg.m = ro
	defer func() { tg.m = rw; ro.Close() }()
	for _, del := range []bool{false, true} {
		var es []node.Entry
		for i := range 3 {
			e, _ := tg.Prepare(rec(fmt.Sprint("10.0.0.", i), cty.EmptyObjectVal))
			es = append(es, e)
		}
		if del {
			tg.Delete(context.Background(), es)
		} else {
			tg.Update(context.Background(), es)
		}
		for _, e := range es {
			if e.Err == nil || !strings.Contains(e.Err.Error(), "CAP_BPF") {
				t.Fatalf("del=%v %s: err %v; want EPERM explained", del, e.Key, e.Err)
			}
		}
	}
}

// TestUnpreparedEntryRefused: an entry this target did not prepare (its
// bytes are not a key and a value of the map's sizes) fails alone, and
// the rest of its chunk is written, on the word-wise fill's map shape (4
// + 4 bytes) and on another (LPM key, 1-byte value).
func TestUnpreparedEntryRefused(t *testing.T) {
	dir := requireBPF(t)
	for name, cfg := range map[string]string{
		"hash": fmt.Sprintf("pin = %q\nkey { type = \"ipv4\" }\nvalue {\n type = \"u32\"\n from = 1\n}", dir+"/words"),
		"lpm":  fmt.Sprintf("pin = %q\ntype = \"lpm_trie\"\nkey { type = \"ipv4_prefix\" }\n%s", dir+"/bytes", u8Value),
	} {
		t.Run(name, func(t *testing.T) {
			tg, _ := open(t, cfg)
			var es []node.Entry
			for i := range 3 {
				k := fmt.Sprintf("10.0.%d.1", i)
				if name == "lpm" {
					k += "/32"
				}
				e, err := tg.Prepare(rec(k, cty.EmptyObjectVal))
				if err != nil {
					t.Fatal(err)
				}
				es = append(es, e)
			}
			es[1].Data = es[1].Data[:len(es[1].Data)-1]
			tg.Update(context.Background(), es)
			for i, e := range es {
				if (e.Err != nil) != (i == 1) {
					t.Fatalf("entry %d (%s): err %v; want only entry 1 refused", i, e.Key, e.Err)
				}
			}
			if !strings.Contains(es[1].Err.Error(), "not prepared") {
				t.Fatalf("entry 1: %v", es[1].Err)
			}
			if a, _ := tg.Actual(context.Background()); len(a) != 2 {
				t.Fatalf("want the 2 prepared entries written, map holds %v", a)
			}
		})
	}
}

// TestReadEntryLPMExact: a lookup in an LPM trie finds the longest prefix
// that covers the key, so ReadEntry of a prefix deleted by hand must not
// answer with a shorter prefix that covers it: the deleted one is not in
// the map.
func TestReadEntryLPMExact(t *testing.T) {
	dir := requireBPF(t)
	tg, _ := open(t, fmt.Sprintf("pin = %q\ntype = \"lpm_trie\"\nkey { type = \"ipv4_prefix\" }\n%s", dir+"/lpm", u8Value))
	es := put(t, tg, rec("10.0.0.0/8", cty.EmptyObjectVal), rec("10.1.0.0/16", cty.EmptyObjectVal))
	for _, e := range es {
		if e.Err != nil {
			t.Fatal(e.Err)
		}
	}
	if a, ok, err := tg.ReadEntry(context.Background(), es[1]); !ok || err != nil || a.Key != "10.1.0.0/16" {
		t.Fatalf("ReadEntry(10.1.0.0/16) before the delete = %v, %v, %v", a, ok, err)
	}
	key, _ := tg.split(es[1])
	if err := tg.m.Delete(key); err != nil {
		t.Fatal(err)
	}
	if a, ok, err := tg.ReadEntry(context.Background(), es[1]); ok || err != nil {
		t.Fatalf("ReadEntry(10.1.0.0/16) after deleting it by hand = %v, %v, %v; want not held (10.0.0.0/8 only covers it)", a, ok, err)
	}
	if _, ok, err := tg.ReadEntry(context.Background(), es[0]); !ok || err != nil {
		t.Fatalf("ReadEntry(10.0.0.0/8) = %v, %v", ok, err)
	}
}
