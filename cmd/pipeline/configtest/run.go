package configtest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/redact"
	"github.com/pipeline/pipeline/schema"
)

// settleLimit bounds the real time one test may take to come to rest
// after a step; a graph that never rests fails the test instead of hanging.
const settleLimit = time.Minute

// Result is one test's outcome (also its -json form).
type Result struct {
	File     string    `json:"file"`
	Name     string    `json:"name"`
	Pos      string    `json:"pos"`
	Passed   bool      `json:"passed"`
	Virtual  string    `json:"virtual_time"`
	Elapsed  string    `json:"elapsed"`
	Failures []Failure `json:"failures,omitempty"`
	// settles counts the times the pipeline was let come to rest.
	settles int
}

// Failure is one expectation that did not hold, or a given that could
// not apply.
type Failure struct {
	Pos        string   `json:"pos"`
	Node       string   `json:"node"`
	At         string   `json:"at"`
	Message    string   `json:"message,omitempty"`
	Missing    []Entry  `json:"missing,omitempty"`
	Unexpected []Entry  `json:"unexpected,omitempty"`
	Changed    []Change `json:"changed,omitempty"`
	WantWrites []string `json:"want_writes,omitempty"`
	GotWrites  []string `json:"got_writes,omitempty"`
}

type Entry struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value,omitempty"`
}

type Change struct {
	Key  string          `json:"key"`
	Want json.RawMessage `json:"want"`
	Got  json.RawMessage `json:"got"`
}

// testRun is one test on its sandbox.
type testRun struct {
	t       *Test
	sb      *engine.Sandbox
	secrets *redact.Redactor
	have    map[string]map[string]bool // source -> keys it holds, to check add/update/delete
	res     *Result
}

// Loaded is a configuration loaded and compiled, as the command's loader
// returns it: the files are kept for rendering diagnostics.
type Loaded struct {
	Files     map[string]*hcl.File
	Graph     *graph.Graph
	Sensitive []string // the values of sensitive variables and attributes
	Diags     hcl.Diagnostics
}

// Load loads and compiles the configuration at paths with the variables
// vars (NAME=VALUE).
type Load func(paths, vars []string) Loaded

// Run runs t against the configuration at cfgPaths, loaded by load.
// Errors in the returned diagnostics mean the test could not run (the
// configuration or the test file is wrong).
func Run(ctx context.Context, load Load, cfgPaths []string, t *Test) (*Result, Loaded) {
	started := time.Now()
	l := load(cfgPaths, t.Vars)
	if l.Diags.HasErrors() {
		return nil, l
	}
	if l.Diags = append(l.Diags, checkAddrs(l.Graph, t)...); l.Diags.HasErrors() {
		return nil, l
	}
	sb, err := engine.NewSandbox(l.Graph, slog.New(slog.DiscardHandler))
	if err != nil {
		l.Diags = append(l.Diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot run the test",
			Detail: err.Error(), Subject: t.Decl.Ptr()})
		return nil, l
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sb.Start(ctx)
	defer sb.Stop()
	r := &testRun{t: t, sb: sb, secrets: redact.New(l.Sensitive), have: map[string]map[string]bool{},
		res: &Result{File: t.File, Name: t.Name, Pos: schema.Pos(t.Decl)}}
	if err := r.run(ctx, l.Graph); err != nil {
		r.res.Failures = append(r.res.Failures, Failure{Pos: schema.Pos(t.Decl), Message: err.Error()})
	}
	r.res.Passed = len(r.res.Failures) == 0
	r.res.Virtual = sb.Now().String()
	r.res.Elapsed = time.Since(started).Round(time.Millisecond).String()
	return r.res, l
}

// checkAddrs checks that every given names a source and every expect a
// sink of g.
func checkAddrs(g *graph.Graph, t *Test) hcl.Diagnostics {
	addrs := make([]string, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		addrs = append(addrs, n.Address)
	}
	return CheckAddresses(t, addrs)
}

// CheckAddresses checks that every given of t names a source and every
// expect a sink among addrs, the addresses of a configuration's nodes
// ("KIND.TYPE.NAME"), which a diagnostic lists in the order given.
func CheckAddresses(t *Test, addrs []string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, s := range t.steps {
		want, verb, kind := node.KindSource, "A given", "source"
		if s.expect {
			want, verb, kind = node.KindSink, "An expect", "sink"
		}
		var names []string
		for _, a := range addrs {
			if strings.HasPrefix(a, string(want)+".") {
				names = append(names, a)
			}
		}
		if !slices.Contains(names, s.addr) {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown " + kind,
				Detail: fmt.Sprintf("%s block names a %s of the configuration: one of %v.", verb, kind, names), Subject: s.decl.Ptr()})
		}
	}
	return diags
}

func (r *testRun) run(ctx context.Context, g *graph.Graph) error {
	synced := false
	markSynced := func() error {
		synced = true
		for _, n := range g.Nodes {
			if n.Kind == node.KindSource {
				if err := r.sb.MarkSynced(n.Address); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for i, s := range r.t.steps {
		if !synced && (s.expect || s.at > 0) {
			// The sources' initial state is every given at 0s.
			if err := markSynced(); err != nil {
				return err
			}
		}
		// Givens at one time are applied one after another, and the
		// pipeline settles once before what follows them: settling
		// after each of 20,000 givens took a minute.
		if i == 0 || s.expect || s.at != r.t.steps[i-1].at || r.t.steps[i-1].expect {
			r.res.settles++
			sctx, cancel := context.WithTimeout(ctx, settleLimit)
			err := r.sb.AdvanceTo(sctx, s.at)
			cancel()
			if err != nil {
				return fmt.Errorf("at %s: %w", s.at, err)
			}
		}
		if s.expect {
			r.check(s)
		} else if err := r.give(s); err != nil {
			return err
		}
	}
	if !synced {
		return markSynced()
	}
	return nil
}

// give applies a given step as its source's deltas, one batch.
func (r *testRun) give(s step) error {
	have := r.have[s.addr]
	if have == nil {
		have = map[string]bool{}
		r.have[s.addr] = have
	}
	var deltas []node.Delta
	var problems []string
	for _, k := range sortedKeys(s.add) {
		if have[k] {
			problems = append(problems, fmt.Sprintf("add %q: the source holds it already (use update)", k))
		}
		have[k] = true
		deltas = append(deltas, node.Delta{Key: k, Value: s.add[k]})
	}
	for _, k := range sortedKeys(s.update) {
		if !have[k] {
			problems = append(problems, fmt.Sprintf("update %q: the source does not hold it (use add)", k))
		}
		have[k] = true
		deltas = append(deltas, node.Delta{Key: k, Value: s.update[k]})
	}
	for _, k := range s.del {
		if !have[k] {
			problems = append(problems, fmt.Sprintf("delete %q: the source does not hold it", k))
		}
		delete(have, k)
		deltas = append(deltas, node.Delta{Key: k, Delete: true})
	}
	for _, p := range problems {
		r.res.Failures = append(r.res.Failures, Failure{Pos: schema.Pos(s.decl), Node: s.addr, At: s.at.String(), Message: p})
	}
	return r.sb.Apply(s.addr, deltas)
}

// check compares a sink's target with an expect step.
func (r *testRun) check(s step) {
	f := Failure{Pos: schema.Pos(s.checkRange), Node: s.addr, At: s.at.String()}
	entries, err := r.sb.SinkState(s.addr)
	if err != nil {
		f.Message = err.Error()
		r.res.Failures = append(r.res.Failures, f)
		return
	}
	writes, _ := r.sb.SinkWrites(s.addr)
	got := map[string]cty.Value{}
	for _, e := range entries {
		got[e.Key] = e.Value
	}
	switch {
	case s.hasState:
		r.diffState(&f, s.state, got)
	case s.hasKeys:
		want := map[string]cty.Value{}
		for _, k := range s.keys {
			want[k] = cty.NilVal
		}
		r.diffState(&f, want, got)
	}
	if s.hasWrites {
		gotW := make([]string, 0, len(writes))
		for _, w := range writes {
			op := "+"
			if w.Delete {
				op = "-"
			}
			gotW = append(gotW, op+r.secrets.String(w.Entry.Key))
		}
		if fmt.Sprint(gotW) != fmt.Sprint(s.writes) {
			f.WantWrites, f.GotWrites = append([]string{}, s.writes...), gotW
		}
	}
	if s.content != nil || s.contains != nil {
		f.Message = r.checkContent(s)
	}
	if len(f.Missing)+len(f.Unexpected)+len(f.Changed) > 0 || f.GotWrites != nil || f.Message != "" {
		r.res.Failures = append(r.res.Failures, f)
	}
}

// checkContent compares the file a rendering sink would write with the
// step's content or contains; it returns what differs, masked, or "".
func (r *testRun) checkContent(s step) string {
	got, ok, err := r.sb.SinkContent(s.addr)
	switch {
	case err != nil:
		return r.secrets.String(err.Error())
	case !ok:
		return s.addr + " renders no file: content and contains are for sinks that render one (template)"
	case s.content != nil && got != *s.content:
		return "the rendered file differs (- want, + got):\n" + r.secrets.String(lineDiff(*s.content, got))
	}
	var missing []string
	for _, want := range s.contains {
		if !strings.Contains(got, want) {
			missing = append(missing, r.secrets.String(want))
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("the rendered file lacks %q; it is:\n%s", missing, r.secrets.String(got))
	}
	return ""
}

// lineDiff lists the lines of want missing from got (-) and of got not
// in want (+), in order: enough to see what a render got wrong.
func lineDiff(want, got string) string {
	w, g := strings.SplitAfter(want, "\n"), strings.SplitAfter(got, "\n")
	inG, inW := map[string]int{}, map[string]int{}
	for _, l := range g {
		inG[l]++
	}
	for _, l := range w {
		inW[l]++
	}
	var b strings.Builder
	for _, l := range w {
		if inG[l] > 0 {
			inG[l]--
			continue
		}
		b.WriteString("- " + strings.TrimSuffix(l, "\n") + "\n")
	}
	for _, l := range g {
		if inW[l] > 0 {
			inW[l]--
			continue
		}
		b.WriteString("+ " + strings.TrimSuffix(l, "\n") + "\n")
	}
	return b.String()
}

// diffState fills f with the difference; a want value of cty.NilVal
// matches any value.
func (r *testRun) diffState(f *Failure, want, got map[string]cty.Value) {
	for _, k := range sortedKeys(want) {
		g, ok := got[k]
		w := want[k]
		switch {
		case !ok:
			f.Missing = append(f.Missing, Entry{Key: k, Value: r.show(w)})
		case w != cty.NilVal && !sameValue(w, g):
			f.Changed = append(f.Changed, Change{Key: k, Want: r.show(w), Got: r.show(g)})
		}
	}
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; !ok {
			f.Unexpected = append(f.Unexpected, Entry{Key: r.secrets.String(k), Value: r.show(got[k])})
		}
	}
}

// sameValue compares an expected literal with what the target holds,
// converting the literal to the held type (an HCL tuple to a list, 1 to "1").
func sameValue(want, got cty.Value) bool {
	if got.IsMarked() || want.IsMarked() {
		got, _ = got.UnmarkDeep()
		want, _ = want.UnmarkDeep()
	}
	if c, err := convert.Convert(want, got.Type()); err == nil {
		want = c
	}
	eq := want.Equals(got)
	return eq.IsKnown() && eq.True()
}

// show renders a value as JSON for a failure, secrets masked.
func (r *testRun) show(v cty.Value) json.RawMessage {
	if v == cty.NilVal {
		return nil
	}
	b, err := json.Marshal(view.PlainValue(v, r.secrets))
	if err != nil {
		return json.RawMessage(`null`)
	}
	return b
}

func sortedKeys(m map[string]cty.Value) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
