package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/schema"
)

// knownSource is a script source whose records are known at load time.
type knownSource struct {
	*scriptSource
	recs []node.Record
}

func (k knownSource) KnownRecords() []node.Record { return k.recs }

func TestFanInCompile(t *testing.T) {
	known := func(kv ...string) knownSource {
		var recs []node.Record
		for i := 0; i < len(kv); i += 2 {
			recs = append(recs, node.Record{Key: kv[i], Value: str(kv[i+1])})
		}
		return knownSource{newScriptSource(), recs}
	}
	tests := []struct {
		name  string
		src   string
		impls map[string]any
		want  []string // "line: summary"
	}{
		{name: "ok", src: `
source "script" "a" {}
source "script" "b" {}
sink "mem" "m" { inputs = [source.script.a, source.script.b] }`},
		{name: "both", src: `
source "script" "a" {}
sink "mem" "m" {
  input  = source.script.a
  inputs = [source.script.a]
}`, want: []string{"5: Conflicting input arguments"}},
		{name: "neither", src: `
source "script" "a" {}
sink "mem" "m" {}`, want: []string{"3: Missing required argument"}},
		{name: "empty", src: `
sink "mem" "m" { inputs = [] }`, want: []string{"2: Empty inputs"}},
		{name: "duplicate and undeclared", src: `
source "script" "a" {}
sink "mem" "m" {
  inputs = [source.script.a,
    source.script.a,
    source.script.nope]
}`, want: []string{"5: Duplicate input", "6: Reference to undeclared node"}},
		{name: "not references", src: `
source "script" "a" {}
sink "mem" "m" {
  inputs = [source.script.a,
    "source.script.b"]
}`, want: []string{"5: Invalid reference"}},
		{name: "not a list", src: `
source "script" "a" {}
sink "mem" "m" {
  inputs = source.script.a
}`, want: []string{"4: Invalid reference list"}},
		{name: "mixed types", src: `
source "script" "a" {}
source "objects" "o" {}
sink "mem" "m" {
  inputs = [source.script.a,
    source.objects.o]
}`, want: []string{"6: Type mismatch between inputs"}},
		{name: "merge and on_conflict", src: `
source "script" "a" {}
source "script" "b" {}
sink "mem" "m" {
  inputs      = [source.script.a, source.script.b]
  on_conflict = "first"
  merge       = values[0]
}`, want: []string{"7: Conflicting conflict rules"}},
		{name: "bad rule", src: `
source "script" "a" {}
source "script" "b" {}
sink "mem" "m" {
  inputs      = [source.script.a, source.script.b]
  on_conflict = "frist"
}`, want: []string{"6: Invalid value for on_conflict"}},
		{name: "cycle through fan-in", src: `
source "script" "a" {}
transform "pass" "x" { inputs = [source.script.a, transform.pass.y] }
transform "pass" "y" { input = transform.pass.x }
sink "mem" "m" { input = transform.pass.y }`, want: []string{"3: Cycle in the graph"}},
		{name: "known conflict", src: `
source "script" "a" {}
source "script" "b" {}
sink "mem" "m" {
  inputs = [source.script.a,
    source.script.b]
}`, impls: map[string]any{"source.script.a": known("k", "1", "same", "x"), "source.script.b": known("k", "2", "same", "x")},
			want: []string{"6: Conflicting inputs"}},
		{name: "known conflict resolved by rule", src: `
source "script" "a" {}
source "script" "b" {}
sink "mem" "m" {
  inputs      = [source.script.a, source.script.b]
  on_conflict = "last"
}`, impls: map[string]any{"source.script.a": known("k", "1"), "source.script.b": known("k", "2")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			impls := map[string]any{"source.script.a": newScriptSource(), "source.script.b": newScriptSource(),
				"source.objects.o": newScriptSource(), "sink.mem.m": nodetest.NewMemSink()}
			for k, v := range tt.impls {
				impls[k] = v
			}
			_, diags := compileText(t, tt.src, impls)
			var got []string
			for _, d := range diags {
				if d.Severity == hcl.DiagError {
					got = append(got, fmt.Sprintf("%d: %s", d.Subject.Start.Line, d.Summary))
				}
			}
			sort.Strings(got)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Fatalf("diagnostics (-want +got):\n%s\n%s", d, diags.Error())
			}
		})
	}
}

const fanInConfig = `
source "script" "a" {}
source "script" "b" {}
sink "mem" "m" {
  inputs = [source.script.a, source.script.b]
  %s
}
`

type fanHarness struct {
	a, b *scriptSource
	sink *nodetest.MemSink
	rt   *Runtime
	met  *Metrics
}

func startFanIn(t *testing.T, rule string, sink *nodetest.MemSink) *fanHarness {
	t.Helper()
	h := &fanHarness{a: newScriptSource(), b: newScriptSource(), sink: sink}
	g := mustCompile(t, fmt.Sprintf(fanInConfig, rule), map[string]any{"source.script.a": h.a, "source.script.b": h.b, "sink.mem.m": sink})
	h.met = NewMetrics(prometheus.NewRegistry(), "test")
	rt, err := NewRuntime(g, RunOptions{Metrics: h.met})
	if err != nil {
		t.Fatal(err)
	}
	h.rt = rt
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = rt.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return h
}

// TestFanInSyncAndDeletes: the union is synced only when both inputs are
// (no prune of the other input's keys before), and a key two inputs hold
// lives while either does.
func TestFanInSyncAndDeletes(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		sink := nodetest.NewMemSink()
		sink.Set("b1", str("b")) // written by an earlier run from input b
		sink.Set("stale", str("x"))
		h := startFanIn(t, "", sink)
		h.a.Ops <- func(o node.Output) { o.Replace(recs("a1", "a", "both", "v")); o.MarkSynced() }
		synctest.Wait()
		if _, del, _ := sink.Counts(); del != 0 {
			t.Fatalf("deleted %d entries before input b synced: %v", del, sink.Keys())
		}
		h.b.Ops <- func(o node.Output) { o.Replace(recs("b1", "b", "both", "v")); o.MarkSynced() }
		synctest.Wait()
		want := map[node.Key]cty.Value{"a1": str("a"), "b1": str("b"), "both": str("v")}
		if d := cmp.Diff(want, sink.State(), ctyEq()); d != "" {
			t.Fatalf("after both synced (-want +got):\n%s", d)
		}
		h.a.Ops <- func(o node.Output) { o.Apply([]node.Delta{node.Remove("both", time.Now())}) }
		synctest.Wait()
		if !sink.Has("both", func(cty.Value) bool { return true }) {
			t.Fatalf("key held by input b deleted when input a dropped it")
		}
		h.b.Ops <- func(o node.Output) { o.Apply([]node.Delta{node.Remove("both", time.Now())}) }
		synctest.Wait()
		if sink.Has("both", func(cty.Value) bool { return true }) {
			t.Fatalf("key dropped by both inputs is still in the sink")
		}
	})
}

func TestFanInConflictRules(t *testing.T) {
	tests := []struct {
		rule, want, same string
		conflicts        float64
	}{
		{rule: `on_conflict = "first"`, want: "from-a", same: "x"},
		{rule: `on_conflict = "last"`, want: "from-b", same: "x"},
		{rule: ``, want: "from-a", same: "x", conflicts: 1}, // equal values are no conflict
		// merge computes every key two inputs hold, equal or not.
		{rule: `merge = join("+", values)`, want: "from-a+from-b", same: "x+x"},
		{rule: `merge = values[5]`, want: "from-a", same: "x", conflicts: 2},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := nodetest.NewMemSink()
				h := startFanIn(t, tt.rule, sink)
				h.a.Ops <- func(o node.Output) { o.Replace(recs("k", "from-a", "same", "x")); o.MarkSynced() }
				h.b.Ops <- func(o node.Output) { o.Replace(recs("k", "from-b", "same", "x")); o.MarkSynced() }
				synctest.Wait()
				want := map[node.Key]cty.Value{"k": str(tt.want), "same": str(tt.same)}
				if d := cmp.Diff(want, sink.State(), ctyEq()); d != "" {
					t.Fatalf("sink (-want +got):\n%s", d)
				}
				f := h.rt.nodes[h.rt.g.Node("sink.mem.m")].fanIn
				if got := testutil.ToFloat64(f.conflicts); got != tt.conflicts {
					t.Fatalf("conflicts = %v, want %v", got, tt.conflicts)
				}
				_, inConflict := f.conflict("k")
				if inConflict != (tt.conflicts > 0) {
					t.Fatalf("key k in conflict = %v, want %v", inConflict, tt.conflicts > 0)
				}
				// Resolving the conflict at its source clears it.
				h.b.Ops <- func(o node.Output) { o.Apply([]node.Delta{node.Remove("k", time.Now())}) }
				synctest.Wait()
				if _, still := f.conflict("k"); still {
					t.Fatalf("conflict on k still shown after input b dropped it")
				}
				if !sink.Has("k", func(v cty.Value) bool { return v.RawEquals(str("from-a")) }) {
					t.Fatalf("k should hold input a's value now: %v", sink.State())
				}
			})
		})
	}
}

// TestFanInModel builds random graphs of 2-4 sources, each either feeding
// the fan-in directly or through a chain of pass transforms, with a random
// rule, drives random changes and checks that the sink ends equal to the
// union the model computes.
func TestFanInModel(t *testing.T) {
	defer goleak.VerifyNone(t)
	for seed := range 30 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { fanInModelRun(t, uint64(seed)) })
		})
	}
}

func fanInModelRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 11))
	nsrc := 2 + rng.IntN(3)
	rule := []string{"first", "last"}[rng.IntN(2)]
	var cfg strings.Builder
	impls := map[string]any{}
	srcs := make([]*scriptSource, nsrc)
	var inputs []string
	for i := range nsrc {
		srcs[i] = newScriptSource()
		impls[fmt.Sprintf("source.script.s%d", i)] = srcs[i]
		fmt.Fprintf(&cfg, "source \"script\" \"s%d\" {}\n", i)
		ref := fmt.Sprintf("source.script.s%d", i)
		for j := range rng.IntN(3) {
			fmt.Fprintf(&cfg, "transform \"pass\" \"p%d_%d\" { input = %s }\n", i, j, ref)
			ref = fmt.Sprintf("transform.pass.p%d_%d", i, j)
		}
		inputs = append(inputs, ref)
	}
	sink := nodetest.NewMemSink()
	impls["sink.mem.m"] = sink
	fmt.Fprintf(&cfg, "sink \"mem\" \"m\" {\n inputs = [%s]\n on_conflict = %q\n}\n", strings.Join(inputs, ", "), rule)
	g := mustCompile(t, cfg.String(), impls)
	rt, err := NewRuntime(g, RunOptions{QueueLimit: 1 + rng.IntN(64)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = rt.Run(ctx); close(done) }()
	models := make([]map[node.Key]cty.Value, nsrc)
	for i := range models {
		models[i] = map[node.Key]cty.Value{}
	}
	for step := range 80 {
		i := rng.IntN(nsrc)
		batch := randomBatch(rng, models[i])
		srcs[i].Ops <- func(o node.Output) { o.Apply(batch) }
		if step == 40 {
			for _, s := range srcs {
				s.Ops <- func(o node.Output) { o.MarkSynced() }
			}
		}
		if rng.IntN(5) == 0 {
			synctest.Wait()
		}
	}
	synctest.Wait()
	want := map[node.Key]cty.Value{}
	for i := range nsrc {
		m := models[i]
		if rule == "last" {
			m = models[nsrc-1-i]
		}
		for k, v := range m {
			if _, ok := want[k]; !ok {
				want[k] = v
			}
		}
	}
	if d := cmp.Diff(want, sink.State(), ctyEq()); d != "" {
		t.Fatalf("sink differs from the union (rule %s, config:\n%s) (-want +got):\n%s", rule, cfg.String(), d)
	}
	cancel()
	<-done
}

// projSource is an objects source that records what it is told to decode.
type projSource struct {
	*scriptSource
	got *node.Paths
}

func (p *projSource) Project(paths *node.Paths) hcl.Diagnostics { p.got = paths; return nil }

// readerTransform passes objects on and reads the given paths.
type readerTransform struct {
	passTransform
	paths []string
}

func (r readerTransform) ObjectPaths() (*node.Paths, hcl.Diagnostics) {
	p := &node.Paths{}
	for _, s := range r.paths {
		p.Add(strings.Split(s, ".")...)
	}
	return p, nil
}

// TestFanInProjection: a source read through a fan-in decodes what every
// consumer downstream of the union reads, plus what its other consumers
// read; both sources of the union decode what the union's consumers read.
func TestFanInProjection(t *testing.T) {
	x, y := &projSource{scriptSource: newScriptSource()}, &projSource{scriptSource: newScriptSource()}
	readers := map[string]readerTransform{
		"transform.rec.side": {paths: []string{"spec.a"}},
		"transform.obj.u":    {paths: []string{"status.ip"}},
		"transform.rec.next": {paths: []string{"metadata.labels"}},
	}
	reader := func(b node.Build) (node.Transform, hcl.Diagnostics) { return readers[b.Address], nil }
	reg := node.NewRegistry(
		node.Spec{Kind: node.KindSource, Type: "objects", Summary: "test", Output: node.Objects,
			NewSource: func(b node.Build) (node.Source, hcl.Diagnostics) {
				return map[string]*projSource{"source.objects.x": x, "source.objects.y": y}[b.Address], nil
			}},
		node.Spec{Kind: node.KindTransform, Type: "obj", Summary: "test", Output: node.SameAsInput, NewTransform: reader},
		node.Spec{Kind: node.KindTransform, Type: "rec", Summary: "test", Output: node.Records, NewTransform: reader},
		node.Spec{Kind: node.KindSink, Type: "mem", Summary: "test",
			NewSink: func(node.Build) (node.Sink, hcl.Diagnostics) { return nodetest.NewMemSink(), nil }},
	)
	src := `
source "objects" "x" {}
source "objects" "y" {}
transform "rec" "side" { input = source.objects.x }
transform "obj" "u" { inputs = [source.objects.x, source.objects.y] }
transform "rec" "next" { input = transform.obj.u }
sink "mem" "a" { input = transform.rec.side }
sink "mem" "b" { input = transform.rec.next }
`
	cfg, diags := schema.NewLoader().ParseSource("test.hcl", []byte(src), schema.Options{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if _, diags = graph.Compile(cfg, reg); diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if d := cmp.Diff([]string{".metadata.labels", ".spec.a", ".status.ip"}, x.got.List()); d != "" {
		t.Errorf("source x decodes (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{".metadata.labels", ".status.ip"}, y.got.List()); d != "" {
		t.Errorf("source y decodes (-want +got):\n%s", d)
	}
}

// TestFanInExplainInput: explain names the input of a fan-in whose record
// the sink has, and the other inputs holding the key, and its path goes
// through that input.
func TestFanInExplainInput(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		sink := nodetest.NewMemSink()
		h := startFanIn(t, `on_conflict = "last"`, sink)
		withOrigin := func(src string, rs []node.Record) []node.Record {
			for i := range rs {
				rs[i].Origin = &node.Origin{Source: src}
			}
			return rs
		}
		h.a.Ops <- func(o node.Output) {
			o.Replace(withOrigin("source.script.a", recs("k", "from-a", "a1", "a")))
			o.MarkSynced()
		}
		h.b.Ops <- func(o node.Output) { o.Replace(withOrigin("source.script.b", recs("k", "from-b"))); o.MarkSynced() }
		synctest.Wait()
		tests := []struct {
			key, input string
			others     []string
		}{
			{key: "k", input: "source.script.b", others: []string{"source.script.a"}}, // on_conflict = "last"
			{key: "a1", input: "source.script.a"},
		}
		for _, tt := range tests {
			ex := h.rt.Explain(context.Background(), tt.key)
			if len(ex.Entries) != 1 {
				t.Fatalf("%s: entries %+v", tt.key, ex.Entries)
			}
			e := ex.Entries[0]
			if e.Input != tt.input || !cmp.Equal(e.OtherInputs, tt.others) {
				t.Errorf("%s: input %q, others %v; want %q, %v", tt.key, e.Input, e.OtherInputs, tt.input, tt.others)
			}
			if len(e.Path) != 1 || e.Path[0].Node != tt.input {
				t.Errorf("%s: path %+v, want through %s", tt.key, e.Path, tt.input)
			}
		}
	})
}
