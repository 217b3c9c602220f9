package aggregate

import (
	"maps"
	"math/big"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// An evaluation evaluates again only what a change affects:
//
//   - a stage (a let entry, for_each) whose inputs did not change keeps its
//     value: see deps;
//   - the condition, key and value of a for expression, and key and value
//     for each element of for_each, are evaluated once per element while
//     the element and what they read do not change: see memo;
//   - a stage that is one for expression over records keeps its value
//     when its condition drops every changed record, before and after
//     (memo.dropsChanges), and tells that its value did not change without
//     comparing it (memo.same).
//
// All rest on the same facts: an expression's result depends only on the
// variables it reads, `var` and `local` are fixed for a run, and functions
// are pure where schema.Pure says so. Where what an expression reads cannot
// be told (a reference to `let` as a whole, an impure function), it is
// evaluated every time, as is an element that is unknown or sensitive.
// TestIncrementalMatchesFull compares the result with a full evaluation.

// reads returns what e reads that may change from one evaluation to the
// next, as version names: "records" and "let.NAME". Variables named in
// local are bound by the caller. ok is false when that cannot be told:
// e reads `let` as a whole or an unknown variable, calls an impure
// function, or is not native syntax.
func reads(e hcl.Expression, local ...string) (names []string, ok bool) {
	syn, isSyntax := e.(hclsyntax.Expression)
	if !isSyntax || callsImpure(syn) {
		return nil, false
	}
	for _, tr := range e.Variables() {
		switch root := tr.RootName(); {
		case root == "var" || root == "local" || slices.Contains(local, root):
		case root == "records":
			names = append(names, "records")
		case root == "let" && len(tr) > 1:
			a, isAttr := tr[1].(hcl.TraverseAttr)
			if !isAttr {
				return nil, false
			}
			names = append(names, "let."+a.Name)
		default:
			return nil, false
		}
	}
	slices.Sort(names)
	return slices.Compact(names), true
}

func callsImpure(e hclsyntax.Expression) bool {
	found := false
	_ = hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
		if c, ok := n.(*hclsyntax.FunctionCallExpr); ok && !schema.Pure(c.Name) {
			found = true
		}
		return nil
	})
	return found
}

// deps is what a stage or memo reads, with the versions it saw last.
type deps struct {
	names []string
	seen  []int // nil until first seen
}

// see records the current versions and reports whether any differs from
// the ones seen before (always, the first time).
func (d *deps) see(version map[string]int) bool {
	changed := d.changed(version)
	if d.seen == nil {
		d.seen = make([]int, len(d.names))
	}
	for i, n := range d.names {
		d.seen[i] = version[n]
	}
	return changed
}

// changed reports whether any version differs from the ones seen before.
func (d *deps) changed(version map[string]int) bool {
	if d.seen == nil {
		return true
	}
	for i, n := range d.names {
		if d.seen[i] != version[n] {
			return true
		}
	}
	return false
}

// memo remembers, per element, the results of up to three expressions
// evaluated with that element bound: a for expression's key, value and
// condition, or key and value for an element of for_each. An element of
// `records` is known by its record key and is evaluated again after a
// delta of it (forget); any other by its key or index, and its entry is
// used only while its value is equal to the one remembered.
//
// A memo also tells whether its for expression gave the same value as in
// the evaluation before (same), so that a let entry made of one for
// expression need not compare its value to tell.
type memo struct {
	keyVar, valVar string // the element's variables; valVar "each" for for_each
	records        bool   // iterates over records
	hasCond        bool
	cond           hclsyntax.Expression   // the condition, memoized
	changed        map[node.Key]cty.Value // records changed since the last evaluation, by key: the object, or NilVal when deleted
	deps           deps
	gen            int // evaluations begun
	byID           map[id]*entry
	lastCtx        *hcl.EvalContext // the context of the element looked up last
	last           *entry
	lookups        int // elements looked up in this evaluation
	differ         int // results of this evaluation unlike the element's before
	passing        int // elements the condition let through in the last evaluation
}

// id tells the elements of one collection apart: a record key or map key
// (s), or an index (n).
type id struct {
	s string
	n int64
}

// Parts of a for expression, in memoExpr.part and entry.parts.
const (
	keyPart = iota
	valPart
	condPart
)

// entry is one element and what its expressions gave: parts for a for
// expression, elem for an element of for_each.
type entry struct {
	v     cty.Value
	used  int    // the generation that last looked it up
	stale bool   // a record whose value changed
	old   *entry // what the element was before it changed, if it was
	parts [3]result
	elem  *element
}

type result struct {
	done  bool
	val   cty.Value
	diags hcl.Diagnostics
}

// element is what key and value gave for an element of for_each.
type element struct {
	rec node.Record
	err error
}

// begin starts an evaluation of the expression holding m: every entry is
// dropped when what the expressions read changed, else those that the
// previous evaluation did not use.
func (m *memo) begin(version map[string]int) {
	if m.deps.see(version) {
		clear(m.byID)
		m.passing = -1
	}
	maps.DeleteFunc(m.byID, func(_ id, e *entry) bool { return e.used != m.gen })
	clear(m.changed)
	m.gen++
	m.lookups, m.differ = 0, 0
	m.lastCtx, m.last = nil, nil
}

// forget marks the entry of a record that changed: obj is its new
// object, NilVal when it was deleted.
func (m *memo) forget(k node.Key, obj cty.Value) {
	if !m.records {
		return
	}
	if e := m.byID[id{s: k}]; e != nil {
		e.stale = true
	}
	m.changed[k] = obj
}

// forgetAll drops the entries of every record, after a reset.
func (m *memo) forgetAll() {
	if m.records {
		clear(m.byID)
		clear(m.changed)
		m.passing = -1
	}
}

// dropsChanges reports whether the for expression, over records, would
// give the value of its last evaluation: what its condition reads is the
// same, and every record changed since was dropped by the condition then
// and is dropped now (or is deleted). It evaluates the condition for those
// records only; ctx is the one the for expression is evaluated in.
func (m *memo) dropsChanges(ctx *hcl.EvalContext, version map[string]int) bool {
	if !m.records || m.cond == nil || m.passing < 0 || m.deps.changed(version) {
		return false
	}
	for k, obj := range m.changed {
		if e := m.byID[id{s: k}]; e != nil && !(e.parts[condPart].done && isBool(e.parts[condPart].val, false)) {
			return false
		}
		if obj == cty.NilVal {
			continue
		}
		c := ctx.NewChild()
		c.Variables = map[string]cty.Value{m.keyVar: cty.DynamicVal, m.valVar: obj}
		v, diags := m.cond.Value(c)
		if diags.HasErrors() || !isBool(v, false) {
			return false
		}
	}
	clear(m.changed)
	return true
}

// entry returns the entry of the element bound in ctx, or nil when the
// element cannot be remembered.
func (m *memo) entry(ctx *hcl.EvalContext) *entry {
	if ctx != m.lastCtx { // the parts of one element share its context
		m.lastCtx, m.last = ctx, m.lookup(ctx)
	}
	return m.last
}

func (m *memo) lookup(ctx *hcl.EvalContext) *entry {
	k, hasK := ctx.Variables[m.keyVar]
	v, hasV := ctx.Variables[m.valVar]
	first := m.lookups == 0
	m.lookups++
	if !hasK || !hasV {
		m.differ++
		return nil
	}
	if first && m.hasCond && v.RawEquals(cty.DynamicVal) && k.RawEquals(cty.DynamicVal) {
		// HCL's check of the condition's type, before the elements: it
		// does not reach the value.
		return nil
	}
	e := m.find(k, v)
	if e == nil {
		m.differ++
	}
	return e
}

// find returns the entry of the element k, v (an element of records is v,
// its object), or nil when it cannot be remembered.
func (m *memo) find(k, v cty.Value) *entry {
	if !v.IsKnown() || v.IsMarked() {
		return nil
	}
	var i id
	switch {
	case m.records:
		i.s = v.GetAttr("key").AsString()
	case !k.IsKnown() || k.IsMarked() || k.IsNull():
		return nil
	case k.Type() == cty.String:
		i.s = k.AsString()
	case k.Type() == cty.Number:
		n, acc := k.AsBigFloat().Int64()
		if acc != big.Exact {
			return nil
		}
		i.n = n
	default: // a set's element is its own key
		return nil
	}
	e := m.byID[i]
	if e == nil || e.stale || !(m.records || e.v.RawEquals(v)) {
		if e != nil {
			e.old = nil
		}
		e = &entry{v: v, old: e}
		m.byID[i] = e
	}
	e.used = m.gen
	return e
}

// differs reports whether a part's result just computed may change the
// for expression's value: it is unlike what the element gave before it
// changed, unless it is a condition that drops the element (dropping one
// that passed before shows in the count of those that pass; see same).
func (e *entry) differs(part int) bool {
	r := e.parts[part]
	if part == condPart && isBool(r.val, false) {
		return false
	}
	var was result
	if e.old != nil {
		was = e.old.parts[part]
	}
	return !was.done || len(r.diags) > 0 || len(was.diags) > 0 || !r.val.RawEquals(was.val)
}

// passes reports whether the condition let the element through.
func (m *memo) passes(e *entry) bool {
	c := e.parts[condPart]
	return !m.hasCond || (c.done && isBool(c.val, true))
}

// isBool reports whether v is the bool b, known and without marks.
func isBool(v cty.Value, b bool) bool {
	return v.Type() == cty.Bool && v.IsKnown() && !v.IsMarked() && !v.IsNull() && v.True() == b
}

// same reports whether the evaluation just ended gave the for expression's
// value of the one before: no result differed, and as many elements
// passed. The elements that pass now passed then with the same results;
// as many, they are the same ones, in the same order. Call it once after
// each evaluation that succeeded.
func (m *memo) same() bool {
	n := 0
	for _, e := range m.byID {
		if e.used == m.gen && m.passes(e) {
			n++
		}
	}
	was := m.passing
	m.passing = n
	return m.differ == 0 && n == was
}

// memoExpr is one of the expressions of a memo: it is evaluated once per
// entry, while the memo keeps it.
type memoExpr struct {
	hclsyntax.Expression
	m    *memo
	part int
}

func (e *memoExpr) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	ent := e.m.entry(ctx)
	if ent == nil {
		return e.Expression.Value(ctx)
	}
	r := &ent.parts[e.part]
	if !r.done {
		r.val, r.diags = e.Expression.Value(ctx)
		r.done = true
		if ent.differs(e.part) {
			e.m.differ++
		}
	}
	return r.val, r.diags
}

// newMemo wraps exprs (nil ones stay nil) in a memo over the element
// variables keyVar and valVar. ok is false when one of them reads what
// cannot be attributed; then exprs are to be used as they are.
func newMemo(keyVar, valVar string, exprs ...hclsyntax.Expression) (wrapped []hclsyntax.Expression, m *memo, ok bool) {
	m = &memo{keyVar: keyVar, valVar: valVar, hasCond: len(exprs) > condPart && exprs[condPart] != nil,
		byID: map[id]*entry{}, changed: map[node.Key]cty.Value{}, passing: -1}
	for _, e := range exprs {
		if e == nil {
			continue
		}
		names, ok := reads(e, keyVar, valVar)
		if !ok {
			return nil, nil, false
		}
		m.deps.names = append(m.deps.names, names...)
	}
	slices.Sort(m.deps.names)
	m.deps.names = slices.Compact(m.deps.names)
	wrapped = make([]hclsyntax.Expression, len(exprs))
	for i, e := range exprs {
		if e != nil {
			wrapped[i] = &memoExpr{Expression: e, m: m, part: i}
		}
	}
	if m.hasCond {
		m.cond = wrapped[condPart]
	}
	return wrapped, m, true
}

// indexVar binds the key or index of the element of a for expression that
// names none, so that its memo can tell elements apart; it is not an
// identifier, so no expression can read it.
const indexVar = "~index"

// memoize returns e with each outermost for expression replaced by a copy
// whose condition, key and value are memoized, and adds the memos to
// memos. It looks through function calls, tuples and parentheses, copying
// them; e itself is not changed, since the parsed configuration is shared.
func memoize(e hcl.Expression, memos *[]*memo) hcl.Expression {
	syn, ok := e.(hclsyntax.Expression)
	if !ok {
		return e
	}
	return memoizeSyntax(syn, memos)
}

func memoizeSyntax(e hclsyntax.Expression, memos *[]*memo) hclsyntax.Expression {
	switch x := e.(type) {
	case *hclsyntax.ForExpr:
		c := *x
		if c.KeyVar == "" {
			c.KeyVar = indexVar
		}
		w, m, ok := newMemo(c.KeyVar, c.ValVar, x.KeyExpr, x.ValExpr, x.CondExpr)
		if !ok {
			return x
		}
		// An element of records is known by its record key, unless its
		// index is read.
		m.records = isRecords(x.CollExpr) && !slices.ContainsFunc([]hclsyntax.Expression{x.KeyExpr, x.ValExpr, x.CondExpr}, func(p hclsyntax.Expression) bool {
			return p != nil && x.KeyVar != "" && readsRoot(p, x.KeyVar)
		})
		*memos = append(*memos, m)
		c.KeyExpr, c.ValExpr, c.CondExpr = w[0], w[1], w[2]
		return &c
	case *hclsyntax.FunctionCallExpr:
		c := *x
		c.Args = make([]hclsyntax.Expression, len(x.Args))
		for i, a := range x.Args {
			c.Args[i] = memoizeSyntax(a, memos)
		}
		return &c
	case *hclsyntax.TupleConsExpr:
		c := *x
		c.Exprs = make([]hclsyntax.Expression, len(x.Exprs))
		for i, a := range x.Exprs {
			c.Exprs[i] = memoizeSyntax(a, memos)
		}
		return &c
	case *hclsyntax.ParenthesesExpr:
		c := *x
		c.Expression = memoizeSyntax(x.Expression, memos)
		return &c
	}
	return e
}

// isRecords reports whether e is the variable records itself.
func isRecords(e hclsyntax.Expression) bool {
	t, ok := e.(*hclsyntax.ScopeTraversalExpr)
	return ok && len(t.Traversal) == 1 && t.Traversal.RootName() == "records"
}

func readsRoot(e hclsyntax.Expression, name string) bool {
	return slices.ContainsFunc(e.Variables(), func(t hcl.Traversal) bool { return t.RootName() == name })
}
