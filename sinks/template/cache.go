package template

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/pipeline/pipeline/schema"
	"github.com/zclconf/go-cty/cty"
)

// Reusing the text of the passes that did not change. A render over
// thousands of records spends its time in HCL's evaluation of each pass
// of a %{ for } directive, and a change usually touches one record, so
// most passes write what they wrote the last time. The text of a pass of
// a directive whose body (and if clause) reads nothing but the pass's own
// key and value, the configuration's variables and locals, and functions
// whose result depends only on their arguments, depends only on that key
// and value: the streamer keeps it, keyed by a digest of the key and
// value, and writes it again when a later render meets a pass of the same
// directive with the same digest, instead of evaluating the body. A body
// that reads anything else (records, an enclosing loop's variable,
// file()) leaves its directive uncached: evaluated every time.
//
// Likewise, a for expression over records that such a directive loops
// over ({ for r in records : r.value.backend => r.value... }) is built
// from what each record gave it the last time (its if clause's verdict,
// key and value), evaluating only the records that changed (mapRecords);
// its elements' digests come from those of the records' values, without
// walking the values, and an element's value (a group's tuple) is built
// only for a pass whose text is not kept.
//
// What depends on one record alone (the pass of a directive over records,
// what a for expression over records made of it) is kept on the record
// itself (record.own, one slot per such loop), and goes with it when the
// record changes or goes: a render finds it without a lookup. The passes
// of every other kept directive are kept in the sink's passCache by
// digest.
//
// A reused pass charges the render's budget what its evaluation charged,
// and fails where its evaluation would have (pass.need), and its text
// counts against max_size as it is written: the budget and max_size bound
// a render that reuses text exactly as they bound one that does not.

// loopInfo is what the streamer knows of a %{ for } directive before
// rendering.
type loopInfo struct {
	cached  bool // its passes' text is kept (see above)
	records bool // it loops over records itself: the streamer walks the records in Go
	// mapped is its collection when that is a for expression over
	// records whose parts read only its own variable and the
	// configuration's (mapRecords); nil otherwise.
	mapped *hclsyntax.ForExpr
	// slot is where a record keeps what this directive made of it, when
	// it is cached over records or mapped (record.own).
	slot int
}

// digest identifies a value (or a pass's key and value) by the SHA-256
// of its encoding (digester): sha256(enc(v)) for a value, and for a
// value whose digest is derived from its parts' (a group of mapped
// records), the SHA-256 of an encoding that starts with a byte no value's
// encoding starts with.
type digest [sha256.Size]byte

// pass is the text one pass wrote and what it charged the render's
// budget: cost in all, and need, the least budget left at its start with
// which none of its charges fails.
type pass struct {
	text       string
	cost, need int64
}

// mapping is what a for expression over records made of one record: its
// if clause's verdict, its key (for an object) and value, the value's
// digest, and what it charged the budget.
type mapping struct {
	include    bool
	key        string
	val        cty.Value
	digest     digest
	cost, need int64
}

// own is what the renders kept of one record for one directive: the
// pass of a directive over records, with the digest of its input (the
// record's, and its index when the directive names it), or what the
// directive's for expression over records made of the record.
type own struct {
	d       digest
	pass    *pass
	mapping *mapping
}

// kept holds the passes of the kept directives not over records, per
// directive and digest: what the renders used, each stamped with the
// last render that did (gen). A render that completes drops what it did
// not use (done), so kept holds at most about twice what one render
// uses. A pass is looked up by its digest's first 8 bytes, and found
// only when its whole digest is the one asked for.
type kept struct {
	gen        uint64
	m          map[*hclsyntax.ForExpr]map[uint64]*slot
	used, kept int // passes the render under way used; passes kept in m
}

type slot struct {
	d   digest
	gen uint64
	p   pass
}

func (c *kept) get(f *hclsyntax.ForExpr, d digest) (pass, bool) {
	s, ok := c.m[f][short(d)]
	if !ok || s.d != d {
		return pass{}, false
	}
	if s.gen != c.gen {
		s.gen = c.gen
		c.used++
	}
	return s.p, true
}

func (c *kept) put(f *hclsyntax.ForExpr, d digest, p pass) {
	if c.m == nil {
		c.m = map[*hclsyntax.ForExpr]map[uint64]*slot{}
	}
	m := c.m[f]
	if m == nil {
		m = map[uint64]*slot{}
		c.m[f] = m
	}
	if old, ok := m[short(d)]; !ok {
		c.kept++
	} else if old.gen == c.gen {
		c.used--
	}
	m[short(d)] = &slot{d: d, gen: c.gen, p: p}
	c.used++
}

// done drops what the render that just completed did not use, once that
// is as much as what it used: a sweep of every pass costs about what a
// render that reuses them does.
func (c *kept) done() {
	if c.kept > 2*c.used+64 {
		for _, m := range c.m {
			for k, s := range m {
				if s.gen != c.gen {
					delete(m, k)
					c.kept--
				}
			}
		}
	}
	c.gen++
	c.used = 0
}

func short(d digest) uint64 { return binary.LittleEndian.Uint64(d[:8]) }

// passCache is what a sink keeps between renders, and what the renders
// found kept (hits) and did not (misses), on the records or in passes:
// passes and mappings, for tests.
type passCache struct {
	passes                     kept
	passHits, passMisses       int
	mappingHits, mappingMisses int
}

// done ends a render that completed; after one that did not, what it
// added stays until a render that completes drops what it did not use.
func (c *passCache) done() { c.passes.done() }

// reuse is a sink's knowledge of its template's directives, and the
// passes kept between renders.
type reuse struct {
	loops map[*hclsyntax.ForExpr]loopInfo
	slots int // the slots of record.own
	// readsRecords says the template reads records other than as the
	// collection of a directive over records or of the for expression
	// over records a directive loops over, which the streamer walks in
	// Go: a render then always builds the records variable, else only
	// when it leaves such a collection to HCL (Sink.renderRecords).
	readsRecords bool
	// digests says records carry their digest: a cached directive loops
	// over records.
	digests bool
	// cache is taken by a render and put back after it: a render that
	// finds none (another one holds it) starts from an empty one.
	cache atomic.Pointer[passCache]
}

func newReuse(tmpl hcl.Expression, ctx *hcl.EvalContext) *reuse {
	r := &reuse{}
	r.loops, r.readsRecords = analyseLoops(tmpl, ctx)
	for f, info := range r.loops {
		if info.cached && info.records || info.mapped != nil {
			info.slot = r.slots
			r.slots++
			r.loops[f] = info
		}
	}
	r.digests = r.slots > 0
	return r
}

// take is the cache for one render; give puts it back.
func (r *reuse) take() *passCache {
	if c := r.cache.Swap(nil); c != nil {
		return c
	}
	return &passCache{}
}

func (r *reuse) give(c *passCache) { r.cache.Store(c) }

// analyseLoops says, for each %{ for } directive the streamer walks,
// whether its passes can be kept and whether it loops over records, and
// whether the template reads records anywhere else (reuse.readsRecords).
func analyseLoops(expr hcl.Expression, ctx *hcl.EvalContext) (map[*hclsyntax.ForExpr]loopInfo, bool) {
	syn, ok := expr.(hclsyntax.Node)
	if !ok {
		return nil, true
	}
	w := &loopWalker{ctx: ctx, out: map[*hclsyntax.ForExpr]loopInfo{}, walked: map[hclsyntax.Expression]bool{}}
	_ = hclsyntax.Walk(syn, w)
	return w.out, w.readsRecords
}

// loopWalker walks a template keeping the names bound by the enclosing
// for expressions (scopes), which shadow the configuration's.
type loopWalker struct {
	ctx    *hcl.EvalContext
	scopes []map[string]struct{}
	out    map[*hclsyntax.ForExpr]loopInfo
	// walked are the reads of records the streamer does in Go: the
	// collections of the directives over records and of the mapped for
	// expressions; readsRecords says the template reads it elsewhere.
	walked       map[hclsyntax.Expression]bool
	readsRecords bool
}

func (w *loopWalker) Enter(n hclsyntax.Node) hcl.Diagnostics {
	switch n := n.(type) {
	case hclsyntax.ChildScope:
		w.scopes = append(w.scopes, n.LocalNames)
	case *hclsyntax.TemplateJoinExpr:
		if f, ok := n.Tuple.(*hclsyntax.ForExpr); ok && f.KeyExpr == nil && !f.Group {
			info := loopInfo{cached: w.reads(f, f.ValExpr, f.CondExpr), records: w.overRecords(f)}
			if g, ok := unwrapped(f.CollExpr).(*hclsyntax.ForExpr); ok && g.KeyVar == "" && w.overRecords(g) && w.reads(g, g.KeyExpr, g.ValExpr, g.CondExpr) {
				info.mapped = g
				w.walked[unwrapped(g.CollExpr)] = true
			}
			if info.records {
				w.walked[unwrapped(f.CollExpr)] = true
			}
			w.out[f] = info
		}
	case *hclsyntax.ScopeTraversalExpr:
		if n.Traversal.RootName() == "records" && !w.bound("records") && !w.walked[n] {
			w.readsRecords = true
		}
	}
	return nil
}

func (w *loopWalker) Exit(n hclsyntax.Node) hcl.Diagnostics {
	if _, ok := n.(hclsyntax.ChildScope); ok {
		w.scopes = w.scopes[:len(w.scopes)-1]
	}
	return nil
}

// bound reports whether an enclosing for expression binds name.
func (w *loopWalker) bound(name string) bool {
	for _, s := range w.scopes {
		if _, ok := s[name]; ok {
			return true
		}
	}
	return false
}

// overRecords: the collection is records, as written, not shadowed.
func (w *loopWalker) overRecords(f *hclsyntax.ForExpr) bool {
	tr, ok := unwrapped(f.CollExpr).(*hclsyntax.ScopeTraversalExpr)
	return ok && len(tr.Traversal) == 1 && tr.Traversal.RootName() == "records" && !w.bound("records")
}

// reads reports whether exprs, parts of f, read only f's own variables
// and the configuration's (not records, not an enclosing loop's), and
// call only pure functions: then they give the same for the same values
// of f's variables.
func (w *loopWalker) reads(f *hclsyntax.ForExpr, exprs ...hclsyntax.Expression) bool {
	for _, e := range exprs {
		if e == nil {
			continue
		}
		e = unwrapped(e)
		for _, tr := range e.Variables() {
			name := tr.RootName()
			own := name == f.ValVar || (f.KeyVar != "" && name == f.KeyVar)
			if !own && (name == "records" || w.bound(name) || !defines(w.ctx, name)) {
				return false
			}
		}
		pure := true
		_ = hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
			if c, ok := n.(*hclsyntax.FunctionCallExpr); ok && !schema.Pure(c.Name) {
				pure = false
			}
			return nil
		})
		if !pure {
			return false
		}
	}
	return true
}

// defines reports whether ctx (or a parent) holds variable name.
func defines(ctx *hcl.EvalContext, name string) bool {
	for c := ctx; c != nil; c = c.Parent() {
		if _, ok := c.Variables[name]; ok {
			return true
		}
	}
	return false
}

// digester encodes values into buf, each encoding naming the value's
// kind and the length of each part, so that two values have the same
// encoding only when they are equal and of the same type.
type digester struct{ buf []byte }

// sum is the digest of what was written, and resets the digester.
func (d *digester) sum() digest {
	s := digest(sha256.Sum256(d.buf))
	d.buf = d.buf[:0]
	return s
}

func (d *digester) str(s string) {
	d.buf = binary.AppendUvarint(d.buf, uint64(len(s)))
	d.buf = append(d.buf, s...)
}

func (d *digester) tag(t byte, n int) {
	d.buf = append(d.buf, t)
	d.buf = binary.AppendUvarint(d.buf, uint64(n))
}

// value writes v's encoding; false for a value it does not encode (an
// unknown, marked or capsule value), whose pass is then not kept.
func (d *digester) value(v cty.Value) bool {
	if v == cty.NilVal || !v.IsKnown() || v.IsMarked() {
		return false
	}
	ty := v.Type()
	switch {
	case v.IsNull():
		d.tag('z', 0)
		d.str(ty.GoString())
	case ty == cty.String:
		d.tag('s', 0)
		d.str(v.AsString())
	case ty == cty.Number:
		// The number's precision and mode too: they change how it is
		// written and what arithmetic on it gives.
		b, err := v.AsBigFloat().GobEncode()
		if err != nil {
			return false
		}
		d.tag('n', 0)
		d.str(string(b))
	case ty == cty.Bool:
		d.tag('b', 0)
		if v.True() {
			d.buf = append(d.buf, 1)
		} else {
			d.buf = append(d.buf, 0)
		}
	case ty.IsObjectType():
		attrs := ty.AttributeTypes()
		names := make([]string, 0, len(attrs))
		for name := range attrs {
			names = append(names, name)
		}
		slices.Sort(names)
		d.tag('o', len(names))
		for _, name := range names {
			d.str(name)
			if !d.value(v.GetAttr(name)) {
				return false
			}
		}
	case ty.IsTupleType() || ty.IsListType() || ty.IsMapType() || ty.IsSetType():
		n := v.LengthInt()
		d.tag(seqTag(ty), n)
		if n == 0 && !ty.IsTupleType() {
			d.str(ty.ElementType().GoString()) // an empty collection's type is not in its elements
		}
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			if ty.IsMapType() {
				d.str(k.AsString())
			}
			if !d.value(e) {
				return false
			}
		}
	default:
		return false
	}
	return true
}

// seqTag is the tag of a tuple's, list's, map's or set's encoding.
func seqTag(ty cty.Type) byte {
	switch {
	case ty.IsTupleType():
		return 't'
	case ty.IsListType():
		return 'l'
	case ty.IsMapType():
		return 'm'
	}
	return 'e'
}
