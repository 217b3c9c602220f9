package template

import (
	"bytes"
	"iter"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// streamer renders a template the fast path gave up on, through HCL,
// but one loop element at a time into one buffer, so a render that grows
// past limit stops there instead of HCL building all of it first (HCL
// evaluates a %{ for } into a tuple of every element's text, then joins
// them). Every expression inside (interpolations, conditions, the
// collections looped over) is evaluated by HCL, so the text is HCL's;
// with a cache, the text of passes it met before is reused (cache.go).
type streamer struct {
	buf    bytes.Buffer
	limit  int64
	over   bool
	budget *renderBudget // nil: none (outside a render)
	// What reuses passes (cache.go); loops nil: none. recs are the
	// records, as the records variable holds them.
	recs  []*record
	loops map[*hclsyntax.ForExpr]loopInfo
	slots int // of record.own
	cache *passCache
	// keeping counts the kept passes being evaluated: passes inside one
	// are kept as part of it, not on their own.
	keeping int
	dig     digester
	// base is the configuration's context, whose functions a scratch
	// budget wraps (mapRecords); root is the render's, which holds the
	// records variable once built (setRecords).
	base, root *hcl.EvalContext
}

// render writes expr's text. ok is false when it met anything it leaves
// to HCL's own evaluation (an error, an unknown or null value, a shape it
// does not walk): the caller then evaluates the template with HCL, which
// gives the error. over says the render grew past limit or its budget.
func (st *streamer) render(expr hcl.Expression, ctx *hcl.EvalContext) (data []byte, ok, over bool) {
	if _, wrap := expr.(*hclsyntax.TemplateWrapExpr); wrap {
		return nil, false, false // a lone ${x} is x itself, not text
	}
	if !st.write(expr, ctx) {
		return nil, false, st.over
	}
	return st.buf.Bytes(), true, false
}

func (st *streamer) full() bool {
	if int64(st.buf.Len()) > st.limit {
		st.over = true
	}
	return st.over
}

// write writes expr's text; false: give up (over says why, when it is
// the limit).
func (st *streamer) write(expr hcl.Expression, ctx *hcl.EvalContext) bool {
	switch e := expr.(type) {
	case *hclsyntax.TemplateExpr:
		for _, p := range e.Parts {
			if !st.write(p, ctx) {
				return false
			}
		}
		return true
	case *hclsyntax.TemplateJoinExpr:
		f, ok := e.Tuple.(*hclsyntax.ForExpr)
		if !ok || f.KeyExpr != nil || f.Group {
			return st.leaf(expr, ctx)
		}
		return st.loop(f, ctx)
	case *hclsyntax.ConditionalExpr:
		c, diags := e.Condition.Value(ctx)
		if diags.HasErrors() || !c.IsWhollyKnown() || c.IsNull() {
			return false
		}
		c, _ = c.UnmarkDeep()
		if c, err := convert.Convert(c, cty.Bool); err != nil || c.IsNull() {
			return false
		} else if c.True() {
			return st.write(e.TrueResult, ctx)
		}
		return st.write(e.FalseResult, ctx)
	}
	return st.leaf(expr, ctx)
}

// loop is %{ for k, v in coll }...%{ endfor }, with its if clause. A
// loop over records walks the records in Go; a cached one writes the
// kept text of each pass whose input it met before, without building
// that input when its digest is known before (known).
func (st *streamer) loop(f *hclsyntax.ForExpr, ctx *hcl.EvalContext) bool {
	info := st.loops[f]
	var elems iter.Seq[element]
	var known func(i int) (digest, bool) // an element's digest when known before; nil: none are
	keyed := false                       // known's digests identify the element's key too
	switch coll, ok := st.mapRecords(info, ctx); {
	case st.over:
		return false
	case ok:
		elems = func(yield func(element) bool) {
			for i := range coll.len() {
				if !yield(element{i: i, from: coll}) {
					return
				}
			}
		}
		known = func(i int) (digest, bool) { return coll.digests[i], true }
		keyed = coll.group // a group's digest holds its key
	case info.records:
		for i := range st.recs {
			if !st.recs[i].known {
				return false // as the whole collection's check below
			}
		}
		elems = func(yield func(element) bool) {
			for i, r := range st.recs {
				e := element{i: i, v: r.plain}
				if f.KeyVar != "" { // built only when the loop names it
					e.k = cty.NumberIntVal(int64(i))
				}
				if !yield(e) {
					return
				}
			}
		}
		known = func(i int) (digest, bool) { return st.recs[i].digest, st.recs[i].hashed }
	default:
		if info.mapped != nil {
			setRecords(st.root, st.recs) // left to HCL
		}
		coll, diags := unwrapped(f.CollExpr).Value(ctx)
		if diags.HasErrors() || !coll.IsWhollyKnown() || coll.IsNull() {
			return false
		}
		if coll.ContainsMarked() {
			coll, _ = coll.UnmarkDeep()
		}
		if !coll.CanIterateElements() {
			return false
		}
		elems = elements(coll)
	}
	keep := info.cached && st.cache != nil && st.budget != nil && st.keeping == 0
	child := ctx.NewChild()
	vars := map[string]cty.Value{}
	child.Variables = vars
	for e := range elems {
		if st.budget != nil && st.budget.charge(passCost) != nil {
			st.over = true
			return false
		}
		var d digest
		kept := false
		if keep {
			d, kept = st.passDigest(f, e, known, keyed)
		}
		if kept {
			if p, ok := st.keptPass(f, info, e.i, d); ok {
				if !st.reuse(p) {
					return false
				}
				continue
			}
		}
		if f.KeyVar != "" {
			vars[f.KeyVar] = e.key()
		}
		vars[f.ValVar] = e.value()
		if kept && !st.keep(f, info, e.i, child, d) || !kept && !st.pass(f, child) {
			return false
		}
	}
	return true
}

// element is one element a %{ for } directive loops over, i-th: its key
// and value, or the for expression over records they are built from
// (mapped), only when a pass is evaluated.
type element struct {
	i    int
	k, v cty.Value
	from *mapped
}

func (e element) key() cty.Value {
	if e.from != nil {
		return e.from.key(e.i)
	}
	return e.k
}

func (e element) value() cty.Value {
	if e.from != nil {
		return e.from.value(e.i)
	}
	return e.v
}

// elements iterates a collection's elements.
func elements(coll cty.Value) iter.Seq[element] {
	return func(yield func(element) bool) {
		i := 0
		for it := coll.ElementIterator(); it.Next(); i++ {
			if k, v := it.Element(); !yield(element{i: i, k: k, v: v}) {
				return
			}
		}
	}
}

// passDigest is the digest of a pass's input: its value's (known(i), or
// sha256(enc(v))) when f names no key or keyed says it identifies the
// key too, else sha256(enc(k) 'D' that). false: one of them is a value
// the digester does not encode.
func (st *streamer) passDigest(f *hclsyntax.ForExpr, e element, known func(int) (digest, bool), keyed bool) (d digest, ok bool) {
	if known != nil {
		d, ok = known(e.i)
	} else if ok = st.dig.value(e.value()); ok {
		d = st.dig.sum()
	}
	if ok && f.KeyVar != "" && !keyed {
		if ok = st.dig.value(e.key()); ok {
			st.dig.buf = append(append(st.dig.buf, 'D'), d[:]...)
			d = st.dig.sum()
		}
	}
	st.dig.buf = st.dig.buf[:0] // after a value it did not encode
	return d, ok
}

// pass writes one pass's text: its if clause, then its body.
func (st *streamer) pass(f *hclsyntax.ForExpr, ctx *hcl.EvalContext) bool {
	if f.CondExpr != nil {
		c, diags := f.CondExpr.Value(ctx)
		if diags.HasErrors() || !c.IsWhollyKnown() || c.IsNull() {
			return false
		}
		c, _ = c.UnmarkDeep()
		if c.Type() != cty.Bool {
			return false
		}
		if c.False() {
			return true
		}
	}
	return st.write(unwrapped(f.ValExpr), ctx) && !st.full()
}

// keptPass is the text kept for the pass of f whose input has digest d,
// the i-th: on its record for a loop over records, else in the cache.
func (st *streamer) keptPass(f *hclsyntax.ForExpr, info loopInfo, i int, d digest) (p pass, ok bool) {
	if info.records {
		if o := st.own(i, info.slot); o.pass != nil && o.d == d {
			p, ok = *o.pass, true
		}
	} else {
		p, ok = st.cache.passes.get(f, d)
	}
	if ok {
		st.cache.passHits++
	} else {
		st.cache.passMisses++
	}
	return p, ok
}

// own is what the renders kept of the i-th record for the loop of slot.
func (st *streamer) own(i, slot int) *own {
	r := st.recs[i]
	if r.own == nil {
		r.own = make([]own, st.slots)
	}
	return &r.own[slot]
}

// reuse writes a kept pass's text, charging the budget what its
// evaluation did, failing where it would have.
func (st *streamer) reuse(p pass) bool {
	if st.budget.replay(p.cost, p.need) != nil {
		st.over = true
		return false
	}
	st.buf.WriteString(p.text)
	return !st.full()
}

// keep writes the i-th pass of a cached loop, whose input has digest d,
// and keeps its text (keptPass).
func (st *streamer) keep(f *hclsyntax.ForExpr, info loopInfo, i int, ctx *hcl.EvalContext, d digest) bool {
	start := st.buf.Len()
	st.keeping++
	ok, cost, need := st.budget.measure(func() bool { return st.pass(f, ctx) })
	st.keeping--
	if !ok {
		return false
	}
	p := pass{text: string(st.buf.Bytes()[start:]), cost: cost, need: need}
	if info.records {
		*st.own(i, info.slot) = own{d: d, pass: &p}
	} else {
		st.cache.passes.put(f, d, p)
	}
	return true
}

// leaf writes an expression's value converted to text, as HCL's template
// does.
func (st *streamer) leaf(expr hcl.Expression, ctx *hcl.EvalContext) bool {
	v, diags := expr.Value(ctx)
	if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() {
		return false
	}
	v, _ = v.UnmarkDeep()
	s, err := convert.Convert(v, cty.String)
	if err != nil || s.IsNull() {
		return false
	}
	st.buf.WriteString(s.AsString())
	return !st.full()
}
