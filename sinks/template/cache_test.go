package template

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// buildSink builds a template sink from body, with prelude (variable
// and locals blocks) beside it in the configuration.
func buildSink(t testing.TB, prelude, body string) *Sink {
	t.Helper()
	return buildSinkIn(t, t.TempDir(), prelude, body)
}

// buildSinkIn is buildSink with the configuration in dir: two sinks built
// in one directory give the same error texts.
func buildSinkIn(t testing.TB, dir, prelude, body string) *Sink {
	t.Helper()
	src := prelude + "\nsink \"template\" \"test\" {\ninput = source.static.x\npath = \"" + filepath.Join(dir, "out") + "\"\n" + body + "\n}\n"
	cfg, diags := schema.NewLoader().ParseSource(filepath.Join(dir, "test.hcl"), []byte(src), schema.Options{Environ: []string{"E=env"}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	spec := Spec()
	nb := cfg.Nodes[0]
	content, diags := schema.Decode(nb.Body, spec.FullBody(), cfg.Ctx, nb.DeclRange)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	n, diags := spec.Build(node.Build{Address: nb.Address(), Name: nb.Name, Content: content, Input: up, Config: cfg})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return n.Sink.(*Sink)
}

// cacheCase is a template the cached render is held equal to the full
// one on.
type cacheCase struct {
	name, prelude, tmpl string
}

const cachePrelude = `
variable "suffix" {
  type    = string
  default = "!"
}
locals {
  ports = { a = 1, b = 2 }
  tag   = upper(var.suffix)
}
`

// cacheCases cover each way a pass is kept, reused or left alone: a loop
// over records (with and without its index), over a for expression over
// records (grouped, with an if clause, a tuple, an object with unique or
// duplicate keys, a number as key), over the configuration's values,
// nested loops, bodies that read records or an enclosing loop's variable
// (never kept), functions (file() is never kept), shadowed names, errors.
func cacheCases(t testing.TB) []cacheCase {
	file := filepath.Join(t.TempDir(), "snippet")
	if err := os.WriteFile(file, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []cacheCase{
		{"haproxy example", "", "template = <<-EOT\n" + exampleTemplate(t) + "EOT\n"},
		{"records, fast path", "", `template = "%{ for r in records }${r.key}=${r.value.port}\n%{ endfor }"`},
		{"records, index and function", "", `template = "%{ for i, r in records }${i}:${upper(r.value.name)}\n%{ endfor }"`},
		{"records, if and format", "", `template = "%{ for r in records }%{ if r.value.kind == "endpoint" }${format("%s:%d", r.value.address, r.value.port)}%{ else }${jsonencode(r.value)}%{ endif }\n%{ endfor }"`},
		{"grouped, if clause, nested loop", "", `template = "%{ for b, rs in { for r in records : r.value.backend => r.value... if r.value.kind == "endpoint" } }backend ${b}\n%{ for e in rs }  ${e.name} ${join(",", e.tags)} ${e.w}\n%{ endfor }%{ endfor }"`},
		{"grouped by number, keys only", "", `template = "%{ for p, ks in { for r in records : r.value.port => r.key... } }${p}=${length(ks)} %{ endfor }"`},
		{"object, unique keys", "", `template = "%{ for k, v in { for r in records : r.key => r.value.name } }${k}=${v}\n%{ endfor }"`},
		{"object, duplicate keys", "", `template = "%{ for k, v in { for r in records : r.value.backend => r.value.name } }${k}=${v}\n%{ endfor }"`},
		{"tuple with if, index", "", `template = "%{ for i, v in [ for r in records : r.value.port if r.value.kind == "endpoint" ] }${i}:${v}\n%{ endfor }"`},
		{"tuple of objects", "", `template = "%{ for v in [ for r in records : { k = r.key, t = r.value.tags } ] }${v.k}${length(v.t)}\n%{ endfor }"`},
		{"grouped value null", "", `template = "%{ for b, vs in { for r in records : r.value.backend => null... } }${b}${length(vs)}%{ endfor }"`},
		{"grouped, key may be missing", "", `template = "%{ for b, rs in { for r in records : r.value.host => r.key... } }${b}${length(rs)}%{ endfor }"`},
		{"var and local", cachePrelude, `template = "%{ for r in records }${var.suffix}${local.tag}${local.ports.a}${env("E")}${r.key}\n%{ endfor }%{ for k, v in local.ports }${k}${v}${var.suffix}%{ endfor }"`},
		{"reads records", "", `template = "%{ for r in records }${r.key == records[0].key}${r.key}\n%{ endfor }"`},
		{"nested over records", "", `template = "%{ for r in records }%{ for s in records }%{ if r.value.backend == s.value.backend && r.key != s.key }${r.key}>${s.key} %{ endif }%{ endfor }\n%{ endfor }"`},
		{"inner reads outer", "", `template = "%{ for r in records }%{ for t in r.value.tags }${r.key}/${t} %{ endfor }%{ endfor }"`},
		{"loop variable named var", cachePrelude, `template = "%{ for var in records }%{ for x in [1] }${var.key}%{ endfor }%{ endfor }"`},
		{"loop variable named records", "", `template = "%{ for r in records }%{ for records in r.value.tags }${records}%{ endfor }%{ endfor }"`},
		{"file() is read each time", "", fmt.Sprintf(`template = "%%{ for r in records }${file(%q)}${r.key}%%{ endfor }"`, file)},
		{"try", "", `template = "%{ for r in records }${try(r.value.snippet, "-")}${try(r.value.tags[1], "")}%{ endfor }"`},
		{"a pass that fails", "", `template = "%{ for r in records }%{ if r.value.kind == "route" }${r.value.address}%{ endif }%{ endfor }"`},
		{"numbers", "", `template = "%{ for r in records }${r.value.w}:${r.value.w * 3}:${r.value.port / 7}\n%{ endfor }"`},
		{"for in a leaf", "", `template = "${join(",", [for r in records : r.key])}%{ for r in records }${r.key}%{ endfor }"`},
	}
	return cases
}

// cacheWorld is a random collection of records shaped as examples/haproxy's
// (routes and endpoints of a few backends), changed a few records at a
// time.
type cacheWorld struct {
	rng       *rand.Rand
	held      map[node.Key]node.Entry
	sensitive bool // some values are marked sensitive
}

func (w *cacheWorld) value(key string) cty.Value {
	r := w.rng
	str := cty.StringVal
	svc := fmt.Sprintf("svc-%d", r.IntN(6))
	tags := []cty.Value{}
	for range r.IntN(3) {
		tags = append(tags, str([]string{"a", "b", "x"}[r.IntN(3)]))
	}
	tagv := cty.ListValEmpty(cty.String)
	if len(tags) > 0 {
		tagv = cty.ListVal(tags)
	}
	w8 := cty.NumberIntVal(int64(r.IntN(4)))
	if r.IntN(4) == 0 {
		w8 = cty.NumberFloatVal(float64(r.IntN(9)) / 4)
	}
	attrs := map[string]cty.Value{"backend": str("shop_" + svc), "w": w8, "tags": tagv}
	if strings.HasPrefix(key, "route/") {
		attrs["kind"], attrs["path"] = str("route"), str([]string{"/", "/api"}[r.IntN(2)])
		attrs["host"] = str([]string{"", "a.example", "b.example"}[r.IntN(3)])
		attrs["snippet"] = str([]string{"", "timeout server 9s"}[r.IntN(2)])
	} else {
		attrs["kind"], attrs["name"] = str("endpoint"), str(fmt.Sprintf("%s-%d", svc, r.IntN(3)))
		attrs["address"], attrs["port"] = str(fmt.Sprintf("10.0.0.%d", r.IntN(4))), cty.NumberIntVal(int64(8080+r.IntN(2)))
	}
	v := cty.ObjectVal(attrs)
	if w.sensitive && r.IntN(5) == 0 {
		v = schema.MarkSensitive(v)
	}
	return v
}

func (w *cacheWorld) newKey() string {
	if w.rng.IntN(3) == 0 {
		return fmt.Sprintf("route/ing-%d/0", w.rng.IntN(12))
	}
	return fmt.Sprintf("endpoint/svc-%d/10.0.%d.%d:8080", w.rng.IntN(6), w.rng.IntN(3), w.rng.IntN(9))
}

// change is a record updated (or added), or deleted.
type change struct {
	e   node.Entry
	del bool
}

// step makes one to three changes, each a record added, updated or
// deleted, and returns them in order.
func (w *cacheWorld) step() []change {
	var out []change
	for range 1 + w.rng.IntN(3) {
		keys := slices.Sorted(maps.Keys(w.held))
		switch op := w.rng.IntN(3); {
		case op == 0 || len(keys) == 0:
			k := w.newKey()
			e := node.Entry{Key: node.Key(k), Value: w.value(k)}
			w.held[e.Key] = e
			out = append(out, change{e: e})
		case op == 1:
			k := keys[w.rng.IntN(len(keys))]
			e := node.Entry{Key: k, Value: w.value(string(k))}
			w.held[k] = e
			out = append(out, change{e: e})
		default:
			k := keys[w.rng.IntN(len(keys))]
			delete(w.held, k)
			out = append(out, change{e: node.Entry{Key: k}, del: true})
		}
	}
	return out
}

// cachedRenderer is a sink that keeps passes between renders and its
// records, kept per change as the target keeps them.
type cachedRenderer struct {
	s    *Sink
	recs map[node.Key]*record
}

func (c *cachedRenderer) apply(changes ...change) {
	for _, ch := range changes {
		if ch.del {
			delete(c.recs, ch.e.Key)
		} else {
			c.recs[ch.e.Key] = c.s.newRecord(ch.e)
		}
	}
}

func (c *cachedRenderer) put(entries ...node.Entry) {
	for _, e := range entries {
		c.apply(change{e: e})
	}
}

func (c *cachedRenderer) render() (rendering, error) {
	var recs []*record
	sensitive := false
	for _, k := range slices.Sorted(maps.Keys(c.recs)) {
		recs = append(recs, c.recs[k])
		sensitive = sensitive || schema.IsSensitive(c.recs[k].value)
	}
	return c.s.renderRecords(recs, sensitive)
}

// fullSink is a sink of tc that keeps nothing: it renders in full.
func fullSink(t testing.TB, dir string, tc cacheCase) *Sink {
	s := buildSinkIn(t, dir, tc.prelude, tc.tmpl)
	s.reuse = nil
	return s
}

// fullRender renders held in full with s, a fullSink.
func fullRender(s *Sink, maxSize int64, held map[node.Key]node.Entry) (rendering, error) {
	s.maxSize = maxSize
	entries := slices.Collect(maps.Values(held))
	slices.SortFunc(entries, func(a, b node.Entry) int { return strings.Compare(string(a.Key), string(b.Key)) })
	return s.render(entries)
}

// checkSame fails unless the cached render equals the full one.
func checkSame(t testing.TB, what string, got rendering, gotErr error, want rendering, wantErr error) {
	t.Helper()
	if g, w := fmt.Sprint(gotErr), fmt.Sprint(wantErr); g != w {
		t.Fatalf("%s: errors differ:\ncached %.300s\nfull   %.300s", what, g, w)
	}
	if !bytes.Equal(got.data, want.data) {
		t.Fatalf("%s: renders differ:\ncached %q\nfull   %q", what, got.data, want.data)
	}
	if !slices.Equal(got.secrets, want.secrets) {
		t.Fatalf("%s: secrets differ", what)
	}
}

// The render that reuses passes is byte-equal to the full render, error
// for error, over random sequences of changes, on every template of
// cacheCases, with max_size drawn around the render's size so that both
// the text limit and the budget refuse some renders; and after a change
// of one record it reuses all but a few passes.
func TestCachedMatchesFull(t *testing.T) {
	for _, tc := range cacheCases(t) {
		for _, sensitive := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/sensitive=%v", tc.name, sensitive), func(t *testing.T) {
				seed := uint64(len(tc.name))
				w := &cacheWorld{rng: rand.New(rand.NewPCG(seed, 7)), held: map[node.Key]node.Entry{}, sensitive: sensitive}
				dir := t.TempDir()
				c := &cachedRenderer{s: buildSinkIn(t, dir, tc.prelude, tc.tmpl), recs: map[node.Key]*record{}}
				fs := fullSink(t, dir, tc)
				for range 20 { // a first collection
					k := w.newKey()
					w.held[node.Key(k)] = node.Entry{Key: node.Key(k), Value: w.value(k)}
				}
				c.put(slices.Collect(maps.Values(w.held))...)
				steps := 40
				if sensitive {
					steps = 15 // the same paths, less the cache where values are marked
				}
				for i := range steps {
					c.apply(w.step()...)
					maxSize := int64(64 << 20)
					if i%3 == 2 {
						want, _ := fullRender(fs, maxSize, w.held)
						maxSize = int64(len(want.data))/4 + w.rng.Int64N(int64(len(want.data))*2+64)
					}
					c.s.maxSize = maxSize
					got, gotErr := c.render()
					want, wantErr := fullRender(fs, maxSize, w.held)
					checkSame(t, fmt.Sprintf("step %d (max_size %d)", i, maxSize), got, gotErr, want, wantErr)
				}
			})
		}
	}
}

// A change of one record re-evaluates only the passes it reaches: the
// record's own pass of the loop over records, its mapping, its backend's
// pass of the grouped loop.
func TestCacheReusesPasses(t *testing.T) {
	dir := t.TempDir()
	s := buildSinkIn(t, dir, "", "template = <<-EOT\n"+exampleTemplate(t)+"EOT\n")
	c := &cachedRenderer{s: s, recs: map[node.Key]*record{}}
	c.put(exampleRecords(50)...)
	if _, err := c.render(); err != nil {
		t.Fatal(err)
	}
	cache := s.reuse.cache.Load()
	if cache.passHits != 0 || cache.passMisses != 50+150+50 || cache.mappingMisses != 200 {
		t.Fatalf("first render: passes %d hit %d missed, mappings %d missed", cache.passHits, cache.passMisses, cache.mappingMisses)
	}
	cache.passHits, cache.passMisses, cache.mappingHits, cache.mappingMisses = 0, 0, 0, 0
	c.apply(change{e: exampleEndpoint(7, 1, 8080), del: true}, change{e: exampleEndpoint(7, 1, 9090)})
	got, err := c.render()
	if err != nil {
		t.Fatal(err)
	}
	if cache.passMisses != 2 || cache.passHits != 248 || cache.mappingMisses != 1 || cache.mappingHits != 199 {
		t.Fatalf("one change: passes %d hit %d missed, mappings %d hit %d missed", cache.passHits, cache.passMisses, cache.mappingHits, cache.mappingMisses)
	}
	if !bytes.Contains(got.data, []byte("server svc-0007-1:9090 10.0.7.2:9090\n")) {
		t.Fatalf("the change is not in the render:\n%s", got.data)
	}
	held := map[node.Key]node.Entry{}
	for k, r := range c.recs {
		held[k] = node.Entry{Key: k, Value: r.value}
	}
	want, err := fullRender(fullSink(t, dir, cacheCase{tmpl: "template = <<-EOT\n" + exampleTemplate(t) + "EOT\n"}), s.maxSize, held)
	checkSame(t, "one change", got, nil, want, err)
}

// Which loops keep their passes: only those whose body reads nothing but
// their own variables, var, local and pure functions.
func TestLoopsKept(t *testing.T) {
	file := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tmpl         string
		cached, maps []bool // per loop, in the template's order
	}{
		{`"%{ for r in records }${var.suffix}${local.tag}${env("E")}%{ endfor }"`, []bool{true}, []bool{false}},
		{`"%{ for b, rs in { for r in records : "${r.value.b}${var.suffix}" => r... } }${b}%{ endfor }"`, []bool{true}, []bool{true}},
		{`"%{ for r in records }${r.key}%{ endfor }"`, []bool{true}, []bool{false}},
		{`"%{ for r in records }${length(records)}%{ endfor }"`, []bool{false}, []bool{false}},
		{`"%{ for r in records }%{ for t in r.value.tags }${r.key}${t}%{ endfor }%{ endfor }"`, []bool{true, false}, []bool{false, false}},
		{`"%{ for r in records }%{ for t in r.value.tags }${t}%{ endfor }%{ endfor }"`, []bool{true, true}, []bool{false, false}},
		{`"%{ for r in records }${file("` + file + `")}%{ endfor }"`, []bool{false}, []bool{false}},
		{`"%{ for b, rs in { for r in records : r.value.b => r... } }${b}%{ endfor }"`, []bool{true}, []bool{true}},
		{`"%{ for b, rs in { for r in records : r.value.b => length(records)... } }${b}%{ endfor }"`, []bool{true}, []bool{false}},
		{`"%{ for b, rs in { for i, r in records : r.value.b => i... } }${b}%{ endfor }"`, []bool{true}, []bool{false}},
		{`"%{ for b, rs in { for r in records : r.value.b => r... } }${b}${length(records)}%{ endfor }"`, []bool{false}, []bool{true}},
		{`"%{ for r in [for r in records : r if r.key != ""] }${r.key}%{ endfor }"`, []bool{true}, []bool{true}},
		{`"%{ for x in [1] }%{ for records in [[2]] }%{ for r in [for r in records : r] }${r}%{ endfor }%{ endfor }%{ endfor }"`, []bool{true, true, true}, []bool{false, false, false}},
	} {
		s := buildSink(t, cachePrelude, "template = "+tc.tmpl)
		var cached, mapped []bool
		for _, f := range loopsInOrder(s) {
			cached = append(cached, s.reuse.loops[f].cached)
			mapped = append(mapped, s.reuse.loops[f].mapped != nil)
		}
		if !slices.Equal(cached, tc.cached) || !slices.Equal(mapped, tc.maps) {
			t.Errorf("%s: cached %v mapped %v, want %v %v", tc.tmpl, cached, mapped, tc.cached, tc.maps)
		}
	}
}

// Renders of one sink at once (the target's and plan's) each take the
// cache or go without it; all give the same text.
func TestConcurrentRenders(t *testing.T) {
	s := buildSink(t, "", "template = <<-EOT\n"+exampleTemplate(t)+"EOT\n")
	entries := exampleRecords(40)
	want, err := s.Render(entries)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 8 {
				es := slices.Clone(entries)
				es[(g*8+i)%len(es)] = exampleEndpoint(99, 0, 8080+i) // sorts after every other
				slices.SortFunc(es, func(a, b node.Entry) int { return strings.Compare(string(a.Key), string(b.Key)) })
				if _, err := s.Render(es); err != nil {
					t.Error(err)
				}
				if got, err := s.Render(entries); err != nil || !bytes.Equal(got, want) {
					t.Errorf("render %d of %d differs (%v)", i, g, err)
				}
			}
		})
	}
	wg.Wait()
}

// FuzzCachedRender drives the cached render through a sequence of
// changes its input spells, on a template its first byte picks, and holds
// each render equal to the full one.
func FuzzCachedRender(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{4, 200, 13, 7, 99, 0, 0, 1, 250, 33, 8, 8, 8})
	f.Add([]byte{8, 1, 1, 1, 2, 2, 2, 3, 3, 3, 0, 0})
	f.Add([]byte{12, 5, 4, 3, 2, 1, 0, 255, 254})
	cases := cacheCases(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 2 || len(in) > 64 {
			return
		}
		tc := cases[int(in[0])%len(cases)]
		var seed [8]byte
		copy(seed[:], in[1:])
		w := &cacheWorld{rng: rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:]), 1)), held: map[node.Key]node.Entry{}, sensitive: in[1]&1 == 1}
		dir := t.TempDir()
		c := &cachedRenderer{s: buildSinkIn(t, dir, tc.prelude, tc.tmpl), recs: map[node.Key]*record{}}
		fs := fullSink(t, dir, tc)
		for i, b := range in[1:] {
			c.apply(w.step()...)
			maxSize := int64(64 << 20)
			if b%4 == 0 {
				maxSize = int64(b) * 16
			}
			c.s.maxSize = maxSize
			got, gotErr := c.render()
			want, wantErr := fullRender(fs, maxSize, w.held)
			checkSame(t, fmt.Sprintf("%s, step %d", tc.name, i), got, gotErr, want, wantErr)
		}
	})
}

// loopsInOrder are the %{ for } directives of s's template, in order.
func loopsInOrder(s *Sink) []*hclsyntax.ForExpr {
	var out []*hclsyntax.ForExpr
	_ = hclsyntax.VisitAll(s.tmpl.(hclsyntax.Node), func(n hclsyntax.Node) hcl.Diagnostics {
		if j, ok := n.(*hclsyntax.TemplateJoinExpr); ok {
			if f, ok := j.Tuple.(*hclsyntax.ForExpr); ok {
				out = append(out, f)
			}
		}
		return nil
	})
	return out
}

// A table keeps its records sorted through random additions, updates
// and deletions, as a sort of every key would, each key's last record.
func TestTableSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	held := map[node.Key]*record{}
	var tb table
	for i := range 3000 {
		for range rng.IntN(4) {
			k := node.Key(fmt.Sprint(rng.IntN(60)))
			if _, ok := held[k]; rng.IntN(2) == 0 && ok {
				delete(held, k)
				tb.remove(k)
				continue
			}
			r := &record{key: string(k)}
			held[k] = r
			tb.set(r)
		}
		if i%5 == 0 {
			continue // changes that pile up until the next read
		}
		got := tb.sorted()
		want := make([]*record, 0, len(held))
		for _, k := range slices.Sorted(maps.Keys(held)) {
			want = append(want, held[k])
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: %d records, want %d", i, len(got), len(want))
		}
	}
}

// A render that reuses passes is refused exactly where the full render
// is, at every max_size from nothing to past the render's size: its text
// counts against max_size, and each reused pass charges the budget what
// its evaluation did and fails where its evaluation would have (whose
// functions check a bound of their result before they run).
func TestCachedBudgetSweep(t *testing.T) {
	for _, tmpl := range []string{
		`template = "%{ for r in records }${jsonencode(r.value)}${format("%s-%5s", r.key, r.key)}${join(",", [for k, v in r.value : k])}\n%{ endfor }"`,
		`template = "%{ for b, rs in { for r in records : r.value.backend => r.value... } }${b}:${join(" ", [for r in rs : jsonencode(r)])}\n%{ endfor }"`,
	} {
		dir := t.TempDir()
		s := buildSinkIn(t, dir, "", tmpl)
		c := &cachedRenderer{s: s, recs: map[node.Key]*record{}}
		entries := exampleRecords(4)
		c.put(entries...)
		held := map[node.Key]node.Entry{}
		for _, e := range entries {
			held[e.Key] = e
		}
		fs := fullSink(t, dir, cacheCase{tmpl: tmpl})
		whole, err := fullRender(fs, 64<<20, held)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.render(); err != nil { // every pass kept
			t.Fatal(err)
		}
		top := int64(len(whole.data)) // where the full render passes: max_size or the budget may bind
		for ; top < 64<<20; top *= 2 {
			if _, err := fullRender(fs, top, held); err == nil {
				break
			}
		}
		refused := 0
		for m := int64(1); m <= top+64; m += max(1, top/300) {
			c.s.maxSize = m
			got, gotErr := c.render()
			want, wantErr := fullRender(fs, m, held)
			checkSame(t, fmt.Sprintf("max_size %d", m), got, gotErr, want, wantErr)
			if gotErr != nil {
				refused++
			}
		}
		lo, hi := int64(1), top // the least max_size with which the full render passes
		for lo < hi {
			if mid := (lo + hi) / 2; func() bool { _, err := fullRender(fs, mid, held); return err == nil }() {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		for m := lo - 2; m <= lo+2; m++ {
			c.s.maxSize = m
			got, gotErr := c.render()
			want, wantErr := fullRender(fs, m, held)
			checkSame(t, fmt.Sprintf("max_size %d, by the boundary %d", m, lo), got, gotErr, want, wantErr)
		}
		if refused == 0 || c.s.reuse.cache.Load().passHits == 0 {
			t.Fatalf("%s: the sweep refused %d renders and reused %d passes", tmpl, refused, c.s.reuse.cache.Load().passHits)
		}
	}
}
