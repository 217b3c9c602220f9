package template

import (
	"encoding/binary"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// mapRecords evaluates g, a for expression over records whose parts read
// only its variable and the configuration's, as HCL would, from what
// each record mapped to, kept on the record; the records changed since the
// last render are evaluated by HCL, one at a time. It gives the
// collection's elements (mapped), each one's value built only when a pass
// needs it. It charges the budget what HCL's evaluation of g would
// (over: st.over), and ok false, having charged nothing, when it leaves g
// to HCL: a record holding a marked or unknown value, a part that fails
// or gives one, a key that is not text, two records with one key without
// grouping (HCL's error).
func (st *streamer) mapRecords(info loopInfo, ctx *hcl.EvalContext) (coll *mapped, ok bool) {
	g := info.mapped
	if g == nil || st.cache == nil || st.budget == nil || st.keeping > 0 {
		return nil, false
	}
	for _, r := range st.recs {
		if !r.known || !r.hashed || r.marked {
			return nil, false
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
		o := st.own(i, info.slot)
		if maps[i] = o.mapping; maps[i] != nil {
			st.cache.mappingHits++
			continue
		}
		st.cache.mappingMisses++
		if maps[i], ok = st.mapRecord(g, sctx, scratch, r); !ok {
			return st.leaveToHCL(scratch)
		}
		o.mapping = maps[i]
	}
	if coll, ok = st.assemble(g, maps); !ok {
		return nil, false
	}
	b := st.budget
	if b.charge(int64(len(st.recs))*elementCost) != nil || b.replay(check.cost, check.need) != nil {
		st.over = true
		return nil, false
	}
	for _, m := range maps {
		if b.replay(m.cost, m.need) != nil {
			st.over = true
			return nil, false
		}
	}
	return coll, true
}

// leaveToHCL gives up mapRecords: over its budget, the render is.
func (st *streamer) leaveToHCL(scratch *renderBudget) (*mapped, bool) {
	if scratch.over {
		// HCL's evaluation would charge at least as much, with no more
		// left.
		st.budget.over, st.over = true, true
	}
	return nil, false
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

// mapped is a for expression over records as mapRecords builds it: its
// elements in order (by key for an object), each one's key, digest and
// records' mappings (members[ends[i-1]:ends[i]]: one, or a group's), its
// value built from those only when a pass needs it.
type mapped struct {
	keys    []string // an object's keys; nil for a tuple
	group   bool     // each element is a tuple of its members' values
	members []*mapping
	ends    []int
	digests []digest
}

func (m *mapped) len() int { return len(m.ends) }

// of is element i's records' mappings.
func (m *mapped) of(i int) []*mapping {
	start := 0
	if i > 0 {
		start = m.ends[i-1]
	}
	return m.members[start:m.ends[i]]
}

// key is element i's key: its index in a tuple.
func (m *mapped) key(i int) cty.Value {
	if m.keys == nil {
		return cty.NumberIntVal(int64(i))
	}
	return cty.StringVal(m.keys[i])
}

// value is element i's value, as HCL builds it.
func (m *mapped) value(i int) cty.Value {
	ms := m.of(i)
	if !m.group {
		return ms[0].val
	}
	vals := make([]cty.Value, len(ms))
	for n, mp := range ms {
		vals[n] = mp.val
	}
	return cty.TupleVal(vals)
}

// assemble orders g's elements from its records' mappings as HCL does,
// with the digest of each: a tuple's in the records' order, an object's
// by key, a group holding its records in their order. false where HCL
// gives an error (two records with one key, without grouping).
func (st *streamer) assemble(g *hclsyntax.ForExpr, maps []*mapping) (*mapped, bool) {
	m := &mapped{group: g.Group}
	if g.KeyExpr == nil {
		for _, mp := range maps {
			if mp.include {
				m.members = append(m.members, mp)
				m.ends = append(m.ends, len(m.members))
				m.digests = append(m.digests, mp.digest)
			}
		}
		return m, true
	}
	if !m.layOut(maps) {
		return nil, false
	}
	m.digests = make([]digest, m.len())
	for i := range m.digests {
		ms := m.of(i)
		if !m.group {
			m.digests[i] = ms[0].digest
			continue
		}
		// A group's digest: sha256('G' enc(key) n digests...), which
		// identifies its key and value (a pass over it names both).
		st.dig.buf = append(st.dig.buf, 'G')
		st.dig.str(m.keys[i])
		st.dig.buf = binary.AppendUvarint(st.dig.buf, uint64(len(ms)))
		for _, mp := range ms {
			st.dig.buf = append(st.dig.buf, mp.digest[:]...)
		}
		m.digests[i] = st.dig.sum()
	}
	return m, true
}

// layOut sets an object's keys, in order, and each one's mappings (the
// included ones of maps, in their order): false for two with one key
// when m does not group.
func (m *mapped) layOut(maps []*mapping) bool {
	// Number each key as first met, and count its mappings.
	number := map[string]int{}
	of := make([]int, len(maps)) // each mapping's key number; -1: left out
	var keys []string
	var sizes []int
	for i, mp := range maps {
		of[i] = -1
		if !mp.include {
			continue
		}
		n, dup := number[mp.key]
		if dup && !m.group {
			return false
		}
		if !dup {
			n = len(keys)
			number[mp.key] = n
			keys, sizes = append(keys, mp.key), append(sizes, 0)
		}
		of[i] = n
		sizes[n]++
	}
	// The keys sorted (an object's attributes iterate in this order),
	// and where each one's mappings go in members.
	order := make([]int, len(keys))
	for n := range order {
		order[n] = n
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
	next := make([]int, len(keys)) // by key number: where its next mapping goes
	m.keys, m.ends = make([]string, len(keys)), make([]int, len(keys))
	at := 0
	for i, n := range order {
		m.keys[i], next[n] = keys[n], at
		at += sizes[n]
		m.ends[i] = at
	}
	m.members = make([]*mapping, at)
	for i, n := range of {
		if n >= 0 {
			m.members[next[n]] = maps[i]
			next[n]++
		}
	}
	return true
}
