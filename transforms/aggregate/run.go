package aggregate

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/exprmetric"
	"github.com/pipeline/pipeline/schema"
)

// Transform is a built transform "aggregate".
type Transform struct {
	address string
	let     []letItem
	forEach hcl.Expression
	key     hcl.Expression
	value   hcl.Expression // nil: an empty object
	ctx     *hcl.EvalContext
}

// Run evaluates the input after each of its events, once it synced.
func (t *Transform) Run(ctx context.Context, env node.Env, in node.Input, out node.Output) error {
	errs := exprmetric.NewErrors()
	if err := env.Metrics.Register(errs); err != nil {
		return fmt.Errorf("%s: register metrics: %w", t.address, err)
	}
	r := newRunner(t, env, errs)
	return node.Consume(ctx, in, t.address, func(ev node.Event) { r.handle(ev, out) })
}

// runner is the state of one run: the input as last seen, sorted on demand,
// and what the last evaluation computed (see memo.go).
type runner struct {
	t       *Transform
	env     node.Env
	errs    prometheus.Counter
	in      map[node.Key]cty.Value // key -> the { key, value } object expressions see
	sorted  []node.Key             // keys of in, sorted; nil when they changed
	prog    *program
	version map[string]int // "records", "let.NAME": counts the changes of each
	synced  bool           // the input synced
	emitted bool           // an evaluation succeeded: the output is synced
	failing bool           // the last evaluation failed as a whole
}

func newRunner(t *Transform, env node.Env, errs prometheus.Counter) *runner {
	return &runner{t: t, env: env, errs: errs, in: map[node.Key]cty.Value{}, prog: newProgram(t), version: map[string]int{}}
}

// program is the transform's expressions for one run, with what lets an
// evaluation skip what did not change.
type program struct {
	let     []stage
	forEach stage
	elems   *memo   // of key and value, per element of for_each; nil: none
	memos   []*memo // every memo of the stages
}

// stage is a let entry or for_each: its value is kept while what it reads
// does not change.
type stage struct {
	name    string // let's entry name, or "for_each"
	version string // its name in runner.version; "" when none reads it
	expr    hcl.Expression
	deps    *deps // nil: evaluated every time
	memos   []*memo
	whole   *memo // the memo of the for expression that is the whole expression, if it is one
	val     cty.Value
	ok      bool // val is the result of the last evaluation, which succeeded
}

func newProgram(t *Transform) *program {
	p := &program{}
	for _, it := range t.let {
		p.let = append(p.let, newStage(it.name, "let."+it.name, it.expr))
	}
	p.forEach = newStage("for_each", "", t.forEach)
	for _, s := range append(p.let, p.forEach) {
		p.memos = append(p.memos, s.memos...)
	}
	key, okKey := t.key.(hclsyntax.Expression)
	value, okValue := t.value.(hclsyntax.Expression)
	if !okKey || (t.value != nil && !okValue) {
		return p // not native syntax: what key and value read cannot be told
	}
	if _, m, ok := newMemo("", "each", key, value); ok {
		p.elems = m
	}
	return p
}

func newStage(name, version string, e hcl.Expression) stage {
	s := stage{name: name, version: version}
	s.expr = memoize(e, &s.memos)
	if names, ok := reads(e); ok {
		s.deps = &deps{names: names}
	}
	if _, ok := s.expr.(*hclsyntax.ForExpr); ok && len(s.memos) == 1 {
		s.whole = s.memos[0]
	}
	return s
}

// value returns the stage's value, evaluated again only when what it reads
// changed, and counts a change of the value in version. Values that are
// RawEquals are indistinguishable (marks and refinements included), so an
// equal value leaves what reads it as it was; a memo that saw nothing
// change tells it without the comparison.
func (s *stage) value(ctx *hcl.EvalContext, version map[string]int) (cty.Value, hcl.Diagnostics) {
	changed := s.deps == nil || s.deps.see(version)
	if s.ok && (!changed || s.whole != nil && s.whole.dropsChanges(ctx, version)) {
		return s.val, nil
	}
	wasOK := s.ok
	s.ok = false // until this evaluation succeeds: an error or a panic leaves it false
	for _, m := range s.memos {
		m.begin(version)
	}
	v, diags := s.expr.Value(ctx)
	if diags.HasErrors() {
		return v, diags
	}
	same := s.whole != nil && s.whole.same() && v.IsKnown() && !v.IsMarked() && !s.val.IsMarked()
	if s.version != "" && (!wasOK || !(same || v.RawEquals(s.val))) {
		version[s.version]++
	}
	s.val, s.ok = v, true
	return s.val, diags
}

func (r *runner) handle(ev node.Event, out node.Output) {
	r.apply(ev)
	r.synced = r.synced || ev.Synced
	if !r.synced {
		return
	}
	recs, err := r.evaluate()
	if err != nil {
		r.errs.Inc()
		r.env.Logger.Warn("evaluation failed; previous output kept", "err", err)
		r.failing = true
		r.env.Health.Set(node.Degraded, "evaluation failed; previous output kept: "+err.Error())
		return
	}
	if r.failing {
		r.failing = false
		r.env.Health.Set(node.Healthy, "")
	}
	out.Replace(recs)
	if !r.emitted {
		r.emitted = true
		out.MarkSynced()
	}
}

// apply updates the input with an event.
func (r *runner) apply(ev node.Event) {
	if ev.Reset {
		clear(r.in)
		for _, rec := range ev.Snapshot {
			r.in[rec.Key] = recordObject(rec.Key, rec.Value)
		}
		r.sorted = nil
		r.version["records"]++
		for _, m := range r.prog.memos {
			m.forgetAll()
		}
	}
	for _, d := range ev.Deltas {
		_, had := r.in[d.Key]
		if d.Delete {
			delete(r.in, d.Key)
		} else {
			r.in[d.Key] = recordObject(d.Key, d.Value)
		}
		if had == d.Delete {
			r.sorted = nil
		}
		r.version["records"]++
		for _, m := range r.prog.memos {
			m.forget(d.Key, r.in[d.Key])
		}
	}
}

func recordObject(k node.Key, v cty.Value) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(k), "value": v})
}

// records returns the input as the list of { key, value } objects sorted
// by key that expressions see.
func (r *runner) records() cty.Value {
	if r.sorted == nil {
		r.sorted = make([]node.Key, 0, len(r.in))
		for k := range r.in {
			r.sorted = append(r.sorted, k)
		}
		slices.Sort(r.sorted)
	}
	if len(r.sorted) == 0 {
		return cty.EmptyTupleVal
	}
	vs := make([]cty.Value, len(r.sorted))
	for i, k := range r.sorted {
		vs[i] = r.in[k]
	}
	return cty.TupleVal(vs)
}

// evaluate computes the whole output. An error of let or for_each fails
// it; an element whose key or value fails is skipped and counted.
func (r *runner) evaluate() (recs []node.Record, err error) {
	defer func() {
		if p := recover(); p != nil { // a function's bug must not stop the pipeline
			recs, err = nil, fmt.Errorf("expression panicked: %v", p)
		}
	}()
	p := r.prog
	vars := map[string]cty.Value{"records": r.records()}
	ctx := r.t.ctx.NewChild()
	ctx.Variables = vars
	let := map[string]cty.Value{}
	for i := range p.let {
		s := &p.let[i]
		vars["let"] = cty.ObjectVal(let)
		v, diags := s.value(ctx, r.version)
		if diags.HasErrors() {
			return nil, fmt.Errorf("let.%s: %w", s.name, diags)
		}
		let[s.name] = v
	}
	vars["let"] = cty.ObjectVal(let)
	coll, diags := p.forEach.value(ctx, r.version)
	if diags.HasErrors() {
		return nil, fmt.Errorf("for_each: %w", diags)
	}
	coll, marks := coll.Unmark()
	if coll.IsNull() {
		return []node.Record{}, nil
	}
	if !coll.IsKnown() || !coll.CanIterateElements() {
		return nil, fmt.Errorf("for_each must be a list, set, map or object, not %s", coll.Type().FriendlyName())
	}
	if p.elems != nil {
		p.elems.begin(r.version)
	}
	each := ctx.NewChild()
	each.Variables = map[string]cty.Value{}
	at := map[node.Key]int{}
	for it := coll.ElementIterator(); it.Next(); {
		k, v := it.Element()
		if len(marks) > 0 {
			k, v = k.WithMarks(marks), v.WithMarks(marks)
		}
		rec, err := r.element(each, k, v)
		if errors.Is(err, schema.ErrNoKey) {
			continue
		}
		if err != nil {
			r.errs.Inc()
			r.env.Logger.Warn("expression failed; element skipped", "each", shortText(k), "err", err)
			continue
		}
		if i, ok := at[rec.Key]; ok {
			recs[i] = rec // the last wins
			continue
		}
		at[rec.Key] = len(recs)
		recs = append(recs, rec)
	}
	if recs == nil {
		recs = []node.Record{}
	}
	return recs, nil
}

// element returns the record of one element of for_each, k and v: what it
// gave before, while the element and what key and value read are the same.
func (r *runner) element(ctx *hcl.EvalContext, k, v cty.Value) (node.Record, error) {
	var ent *entry
	if r.prog.elems != nil {
		ent = r.prog.elems.find(k, v)
	}
	if ent != nil && ent.elem != nil {
		return ent.elem.rec, ent.elem.err
	}
	ctx.Variables["each"] = cty.ObjectVal(map[string]cty.Value{"key": k, "value": v})
	rec, err := r.evalElement(ctx)
	if ent != nil {
		ent.elem = &element{rec: rec, err: err}
	}
	return rec, err
}

// evalElement evaluates key and value for one element of for_each.
func (r *runner) evalElement(ctx *hcl.EvalContext) (node.Record, error) {
	kv, diags := r.t.key.Value(ctx)
	if diags.HasErrors() {
		return node.Record{}, diags
	}
	key, err := schema.RecordKey(kv)
	if err != nil {
		return node.Record{}, err
	}
	val := cty.EmptyObjectVal
	if r.t.value != nil {
		v, diags := r.t.value.Value(ctx)
		if diags.HasErrors() {
			return node.Record{}, fmt.Errorf("%s: %w", key, diags)
		}
		if !v.IsWhollyKnown() {
			return node.Record{}, fmt.Errorf("%s: value is not known", key)
		}
		if err := schema.CheckNumbers(v); err != nil {
			return node.Record{}, fmt.Errorf("%s: value: %w", key, err)
		}
		val = v
	}
	return node.Record{Key: key, Value: val}, nil
}

// shortText names an element of for_each in a log line: its key when a
// string or number, else its type.
func shortText(k cty.Value) string {
	k, _ = k.Unmark()
	if k.IsKnown() && !k.IsNull() {
		if s, err := convert.Convert(k, cty.String); err == nil {
			return s.AsString()
		}
	}
	return k.Type().FriendlyName()
}

var _ node.Transform = (*Transform)(nil)
