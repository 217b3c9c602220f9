package aggregate

import (
	"bytes"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/schema"
)

// differential holds configurations whose incremental evaluation is
// compared with a full one: lookup tables, grouping, indexes, each.key,
// `let` read as a whole, records read inside a for, conditions and
// values that fail for some elements, sensitive values.
var differential = map[string]string{
	"join": join,
	"groups": `input = transform.extract.x
let = {
  by_name = { for r in records : r.value.name => r.value... if r.value.kind != "other" }
  indexed = [for i, r in records : "${i}/${r.key}" if r.value.kind == "route"]
  counts  = { for name, vs in let.by_name : name => length(vs) }
  whole   = length(keys(let))
  kinds   = [for vs in let.by_name : vs[0].kind]
}
for_each = let.by_name
key      = each.key
value    = { n = let.counts[each.key], first = each.value[0].kind, idx = length(let.indexed), w = let.whole, k = length(let.kinds), all = length(records), p = try(each.value[0].port + 1, "none") }
`,
	"list": `input = transform.extract.x
let = { svc = { for r in records : r.value.name => r.value.port... if r.value.kind == "service" } }
for_each = [for r in records : r.value if r.value.kind == "route"]
key      = "${each.key}-${each.value.name}"
value    = { port = let.svc[each.value.service][0] * 2 }
`,
	"object": `input = transform.extract.x
let = { ports = [for r in records : r.value.port if r.value.kind == "service" && r.value.port != null] }
for_each = { for r in records : r.key => r.value if r.value.kind != "other" }
key      = each.value.name
value    = merge(each.value, { total = length(let.ports) })
`,
	"marks": `input = transform.extract.x
let = { named = [for r in records : r.key if r.value.name == "n1"] }
for_each = { for r in records : r.key => r.value if r.value.kind == "route" }
key      = each.key
value    = { named = length(let.named) }
`,
	"conditions": `input = transform.extract.x
let = {
  big   = [for r in records : r.value.name if r.value.kind == "service" && r.value.port > 2]
  pairs = flatten([for r in records : [for s in records : "${r.key}>${s.key}" if s.value.kind == "service" && s.value.name == r.value.service] if r.value.kind == "route"])
}
for_each = concat(let.pairs, let.big, [for b in let.big : upper(b)])
key      = each.value
value    = { at = each.key }
`,
}

// TestIncrementalMatchesFull applies random sequences of upserts, deletes
// and resets and compares, after each event, the incremental evaluation
// with a full one of the same input: the records, the error, and what is
// logged about elements that fail.
func TestIncrementalMatchesFull(t *testing.T) {
	for name, body := range differential {
		t.Run(name, func(t *testing.T) {
			tr := nodetest.MustBuild(t, Spec(), body, up).Transform.(*Transform)
			for seed := range uint64(4) {
				rng := rand.New(rand.NewPCG(seed, 47))
				inc, incLog := diffRunner(tr)
				model := map[node.Key]cty.Value{}
				for step := range 100 {
					ev := randomEvent(rng, model)
					inc.apply(ev)
					full, fullLog := diffRunner(tr)
					full.apply(node.Event{Reset: true, Snapshot: snapshot(model)})
					incLog.Reset()
					got, gotErr := inc.evaluate()
					want, wantErr := full.evaluate()
					if d := cmp.Diff(errText(wantErr), errText(gotErr)); d != "" {
						t.Fatalf("seed %d step %d: error (-full +incremental):\n%s", seed, step, d)
					}
					if d := cmp.Diff(want, got, cmp.Comparer(func(a, b cty.Value) bool { return a.RawEquals(b) })); d != "" {
						t.Fatalf("seed %d step %d: records (-full +incremental):\n%s", seed, step, d)
					}
					if d := cmp.Diff(fullLog.String(), incLog.String()); d != "" {
						t.Fatalf("seed %d step %d: log (-full +incremental):\n%s", seed, step, d)
					}
				}
			}
		})
	}
}

// diffRunner returns a runner of tr, which has evaluated nothing yet, and
// its log.
func diffRunner(tr *Transform) (*runner, *bytes.Buffer) {
	var log bytes.Buffer
	noTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	env := node.Env{Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{ReplaceAttr: noTime})), Metrics: prometheus.NewRegistry()}
	return newRunner(tr, env, prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})), &log
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func snapshot(model map[node.Key]cty.Value) []node.Record {
	var recs []node.Record
	for _, k := range slices.Sorted(maps.Keys(model)) {
		recs = append(recs, node.Record{Key: k, Value: model[k]})
	}
	return recs
}

// randomEvent changes model at random and returns the event saying so:
// mostly one to three upserts or deletes, sometimes a reset or nothing.
func randomEvent(rng *rand.Rand, model map[node.Key]cty.Value) node.Event {
	switch rng.IntN(20) {
	case 0:
		for range rng.IntN(4) {
			k, v := randomRecord(rng)
			model[k] = v
		}
		return node.Event{Reset: true, Synced: true, Snapshot: snapshot(model)}
	case 1:
		return node.Event{Synced: true}
	}
	var ev node.Event
	for range 1 + rng.IntN(3) {
		k, v := randomRecord(rng)
		if _, ok := model[k]; ok && rng.IntN(3) == 0 {
			delete(model, k)
			ev.Deltas = append(ev.Deltas, node.Remove(k, time.Time{}))
			continue
		}
		model[k] = v
		ev.Deltas = append(ev.Deltas, node.Upsert(k, v, time.Time{}))
	}
	return ev
}

// randomRecord returns a route, a service or another record, keyed
// mostly by kind and name; a few are odd: a port that is a string or
// null, a sensitive name, a duplicate service under another key.
func randomRecord(rng *rand.Rand) (node.Key, cty.Value) {
	name := fmt.Sprintf("n%d", rng.IntN(6))
	nameVal := cty.StringVal(name)
	if rng.IntN(25) == 0 {
		nameVal = schema.MarkSensitive(nameVal)
	}
	var kind string
	attrs := map[string]cty.Value{"name": nameVal}
	switch rng.IntN(5) {
	case 0, 1:
		kind = "route"
		attrs["service"] = cty.StringVal(fmt.Sprintf("n%d", rng.IntN(6)))
	case 2, 3:
		kind = "service"
		switch rng.IntN(12) {
		case 0:
			attrs["port"] = cty.StringVal("x")
		case 1:
			attrs["port"] = cty.NullVal(cty.Number)
		default:
			attrs["port"] = cty.NumberIntVal(int64(rng.IntN(4)))
		}
	default:
		kind = "other"
	}
	attrs["kind"] = cty.StringVal(kind)
	key := kind + "/" + name
	if rng.IntN(8) == 0 {
		key = fmt.Sprintf("x/%d", rng.IntN(4))
	}
	return key, cty.ObjectVal(attrs)
}

// TestReads checks what an expression is found to read, and that what
// cannot be told makes it evaluated every time (ok false).
func TestReads(t *testing.T) {
	for _, tc := range []struct {
		expr  string
		names []string
		ok    bool
	}{
		{`[for r in records : r.value if r.value.kind == "route"]`, []string{"records"}, true},
		{`{ for k, v in let.a : k => let.b[v] }`, []string{"let.a", "let.b"}, true},
		{`"${var.x}-${local.y}"`, nil, true},
		{`length(keys(let))`, nil, false},
		{`file("x")`, nil, false},
		{`[for r in records : file(r.key)]`, nil, false},
		{`each.value`, nil, false},
	} {
		e, diags := hclsyntax.ParseExpression([]byte(tc.expr), "t.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		names, ok := reads(e)
		if ok != tc.ok || !slices.Equal(names, tc.names) {
			t.Errorf("reads(%s) = %v, %v; want %v, %v", tc.expr, names, ok, tc.names, tc.ok)
		}
	}
}
