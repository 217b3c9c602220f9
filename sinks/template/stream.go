package template

import (
	"bytes"
	"encoding/binary"
	"iter"
	"slices"

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
	cache *passCache
	// keeping counts the kept passes being evaluated: passes inside one
	// are kept as part of it, not on their own.
	keeping int
	dig     digester
	// base is the configuration's context, whose functions a scratch
	// budget wraps (mapRecords).
	base *hcl.EvalContext
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
// kept text of each pass whose input it met before.
func (st *streamer) loop(f *hclsyntax.ForExpr, ctx *hcl.EvalContext) bool {
	info := st.loops[f]
	var elems iter.Seq2[int, [2]cty.Value] // index, and key and value
	var known func(i int) (digest, bool)   // an element's digest when known before; nil: none are
	switch coll, digests, ok := st.mapRecords(info.mapped, ctx); {
	case st.over:
		return false
	case ok:
		elems = elements(coll)
		known = func(i int) (digest, bool) { return digests[i], true }
	case info.records:
		for i := range st.recs {
			if !st.recs[i].known {
				return false // as the whole collection's check below
			}
		}
		elems = func(yield func(int, [2]cty.Value) bool) {
			for i := range st.recs {
				k := cty.NilVal // read only when the loop names it
				if f.KeyVar != "" {
					k = cty.NumberIntVal(int64(i))
				}
				if !yield(i, [2]cty.Value{k, st.recs[i].plain}) {
					return
				}
			}
		}
		known = func(i int) (digest, bool) { return st.recs[i].digest, st.recs[i].hashed }
	default:
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
	for i, kv := range elems {
		if st.budget != nil && st.budget.charge(passCost) != nil {
			st.over = true
			return false
		}
		if f.KeyVar != "" {
			vars[f.KeyVar] = kv[0]
		}
		vars[f.ValVar] = kv[1]
		var d digest
		kept := false
		if keep {
			d, kept = st.passDigest(f, kv[0], kv[1], i, known)
		}
		if kept && !st.keptPass(f, child, d) || !kept && !st.pass(f, child) {
			return false
		}
	}
	return true
}

// elements iterates a collection's elements, with their index.
func elements(coll cty.Value) iter.Seq2[int, [2]cty.Value] {
	return func(yield func(int, [2]cty.Value) bool) {
		i := 0
		for it := coll.ElementIterator(); it.Next(); i++ {
			if k, v := it.Element(); !yield(i, [2]cty.Value{k, v}) {
				return
			}
		}
	}
}

// passDigest is the digest of a pass's input: its value's (known(i), or
// sha256(enc(v))) when f names no key, else sha256(enc(k) 'D' that).
// false: one of them is a value the digester does not encode.
func (st *streamer) passDigest(f *hclsyntax.ForExpr, k, v cty.Value, i int, known func(int) (digest, bool)) (d digest, ok bool) {
	if known != nil {
		d, ok = known(i)
	} else if ok = st.dig.value(v); ok {
		d = st.dig.sum()
	}
	if ok && f.KeyVar != "" {
		if ok = st.dig.value(k); ok {
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

// keptPass writes a pass of a cached loop whose input has digest d: the
// text kept for it, else its evaluation, then kept.
func (st *streamer) keptPass(f *hclsyntax.ForExpr, ctx *hcl.EvalContext, d digest) bool {
	if p, ok := st.cache.passes.get(f, d); ok {
		if st.budget.replay(p.cost, p.need) != nil {
			st.over = true
			return false
		}
		st.buf.WriteString(p.text)
		return !st.full()
	}
	start := st.buf.Len()
	st.keeping++
	ok, cost, need := st.budget.measure(func() bool { return st.pass(f, ctx) })
	st.keeping--
	if ok {
		st.cache.passes.put(f, d, pass{text: string(st.buf.Bytes()[start:]), cost: cost, need: need})
	}
	return ok
}

// mapRecords evaluates g, a for expression over records whose parts read
// only its variable and the configuration's, as HCL would, from what
// each record mapped to, kept per record; the records changed since the
// last render are evaluated by HCL, one at a time. It gives the
// collection and the digest of each of its elements, in order (by key
// for an object). It charges the budget what HCL's evaluation of g would
// (over: st.over), and ok false, having charged nothing, when it leaves g
// to HCL: a record holding a marked or unknown value, a part that fails
// or gives one, a key that is not text, two records with one key without
// grouping (HCL's error).
func (st *streamer) mapRecords(g *hclsyntax.ForExpr, ctx *hcl.EvalContext) (coll cty.Value, digests []digest, ok bool) {
	if g == nil || st.cache == nil || st.budget == nil || st.keeping > 0 {
		return cty.NilVal, nil, false
	}
	for _, r := range st.recs {
		if !r.known || !r.hashed || r.marked {
			return cty.NilVal, nil, false
		}
	}
	// What HCL charges is measured against a scratch budget, and charged
	// to the render's once g is known to be evaluated here.
	scratch := &renderBudget{left: st.budget.left}
	sctx := ctx.NewChild()
	sctx.Variables = map[string]cty.Value{budgetVar: cty.CapsuleVal(budgetType, scratch)}
	sctx.Functions = budgetFuncs(st.base, scratch)
	var check pass // HCL's check of the if clause before the first record
	if g.CondExpr != nil {
		ok, check.cost, check.need = scratch.measure(func() bool {
			c := sctx.NewChild()
			c.Variables = map[string]cty.Value{g.ValVar: cty.DynamicVal}
			v, diags := g.CondExpr.Value(c)
			if diags.HasErrors() || v.IsNull() {
				return false
			}
			_, err := convert.Convert(v, cty.Bool)
			return err == nil
		})
		if !ok {
			return st.leaveToHCL(scratch)
		}
	}
	maps := make([]*mapping, len(st.recs))
	for i, r := range st.recs {
		if maps[i], ok = st.cache.mappings.get(g, r.digest); ok {
			continue
		}
		if maps[i], ok = st.mapRecord(g, sctx, scratch, r); !ok {
			return st.leaveToHCL(scratch)
		}
		st.cache.mappings.put(g, r.digest, maps[i])
	}
	coll, digests, ok = st.assemble(g, maps)
	if !ok {
		return cty.NilVal, nil, false
	}
	b := st.budget
	if b.charge(int64(len(st.recs))*elementCost) != nil || b.replay(check.cost, check.need) != nil {
		st.over = true
		return cty.NilVal, nil, false
	}
	for _, m := range maps {
		if b.replay(m.cost, m.need) != nil {
			st.over = true
			return cty.NilVal, nil, false
		}
	}
	return coll, digests, true
}

// leaveToHCL gives up mapRecords: over its budget, the render is.
func (st *streamer) leaveToHCL(scratch *renderBudget) (cty.Value, []digest, bool) {
	if scratch.over {
		// HCL's evaluation would charge at least as much, with no more
		// left.
		st.budget.over, st.over = true, true
	}
	return cty.NilVal, nil, false
}

// mapRecord evaluates g's parts for one record as HCL does (if clause,
// key, value), measuring what they charge; false: leave g to HCL.
func (st *streamer) mapRecord(g *hclsyntax.ForExpr, sctx *hcl.EvalContext, scratch *renderBudget, r *record) (m *mapping, ok bool) {
	m = &mapping{}
	ctx := sctx.NewChild()
	ctx.Variables = map[string]cty.Value{g.ValVar: r.obj}
	ok, m.cost, m.need = scratch.measure(func() bool {
		m.include = true
		if g.CondExpr != nil {
			c, diags := g.CondExpr.Value(ctx)
			if diags.HasErrors() || !c.IsKnown() || c.IsNull() || c.IsMarked() {
				return false
			}
			c, err := convert.Convert(c, cty.Bool)
			if err != nil || c.IsMarked() {
				return false
			}
			if m.include = c.True(); !m.include {
				return true
			}
		}
		if g.KeyExpr != nil {
			k, diags := g.KeyExpr.Value(ctx)
			if diags.HasErrors() || !k.IsKnown() || k.IsNull() || k.IsMarked() {
				return false
			}
			k, err := convert.Convert(k, cty.String)
			if err != nil || k.IsMarked() {
				return false
			}
			m.key = k.AsString()
		}
		v, diags := g.ValExpr.Value(ctx)
		if diags.HasErrors() || !v.IsWhollyKnown() || v.ContainsMarked() {
			return false
		}
		m.val = v
		if !st.dig.value(v) {
			st.dig.buf = st.dig.buf[:0]
			return false
		}
		m.digest = st.dig.sum()
		return true
	})
	return m, ok
}

// assemble builds g's value from its records' mappings, as HCL does, and
// the digest of each element; false where HCL gives an error (two
// records with one key, without grouping).
func (st *streamer) assemble(g *hclsyntax.ForExpr, maps []*mapping) (cty.Value, []digest, bool) {
	if g.KeyExpr == nil {
		vals := []cty.Value{}
		var digests []digest
		for _, m := range maps {
			if m.include {
				vals = append(vals, m.val)
				digests = append(digests, m.digest)
			}
		}
		return cty.TupleVal(vals), digests, true
	}
	var keys []string
	groups := map[string][]int{}
	for i, m := range maps {
		if !m.include {
			continue
		}
		if _, dup := groups[m.key]; dup && !g.Group {
			return cty.NilVal, nil, false
		}
		if groups[m.key] == nil {
			keys = append(keys, m.key)
		}
		groups[m.key] = append(groups[m.key], i)
	}
	slices.Sort(keys) // an object's attributes iterate in this order
	vals := make(map[string]cty.Value, len(keys))
	digests := make([]digest, len(keys))
	for j, k := range keys {
		idx := groups[k]
		if !g.Group {
			vals[k], digests[j] = maps[idx[0]].val, maps[idx[0]].digest
			continue
		}
		// A group's digest: sha256('G' enc(key) n digests...).
		tuple := make([]cty.Value, len(idx))
		st.dig.buf = append(st.dig.buf, 'G')
		st.dig.str(k)
		st.dig.buf = binary.AppendUvarint(st.dig.buf, uint64(len(idx)))
		for n, i := range idx {
			tuple[n] = maps[i].val
			st.dig.buf = append(st.dig.buf, maps[i].digest[:]...)
		}
		vals[k], digests[j] = cty.TupleVal(tuple), st.dig.sum()
	}
	return cty.ObjectVal(vals), digests, true
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
