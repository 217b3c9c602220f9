package graph

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// readInputs reads the input or inputs attribute of a transform or sink,
// and for a fan-in its conflict rule. Exactly one of input and inputs is
// set; inputs holds at least one reference.
func readInputs(n *Node, content *schema.Content) ([]hcl.Traversal, hcl.Diagnostics) {
	one, many := node.InputAttr.Has(content), node.InputsAttr.Has(content)
	switch {
	case one && many:
		rng := content.Attrs[node.InputsAttr.Name()].NameRange
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Conflicting input arguments",
			Detail:  "Set either input (one node) or inputs (a list of nodes), not both. Move the input reference into the inputs list.",
			Subject: rng.Ptr()}}
	case !one && !many:
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Missing required argument",
			Detail:  "The argument \"input\" is required, but no definition was found. Set input = KIND.TYPE.NAME, or inputs = [...] to consume several nodes.",
			Subject: missingRange(n).Ptr()}}
	case one:
		tr, rng, d := node.InputAttr.Get(content)
		n.InputRange, n.elemRanges = rng, []hcl.Range{rng}
		return []hcl.Traversal{tr}, append(d, readConflictRule(n, content, false)...)
	}
	trs, rng, d := node.InputsAttr.Get(content)
	n.InputRange = rng
	if d.HasErrors() {
		return []hcl.Traversal{nil}, d
	}
	if len(trs) == 0 {
		return nil, append(d, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Empty inputs",
			Detail: "inputs lists no node. List at least one source or transform.", Subject: rng.Ptr()})
	}
	for _, tr := range trs {
		n.elemRanges = append(n.elemRanges, tr.SourceRange())
	}
	return trs, append(d, readConflictRule(n, content, len(trs) > 1)...)
}

// sameValue compares two values ignoring marks (a sensitive value equals
// its unmarked twin).
func sameValue(a, b cty.Value) bool {
	a, _ = a.UnmarkDeep()
	b, _ = b.UnmarkDeep()
	return a.RawEquals(b)
}

// readConflictRule stores on_conflict and merge on n and checks them:
// both may not be set, and they mean something only with several inputs.
func readConflictRule(n *Node, content *schema.Content, fanIn bool) hcl.Diagnostics {
	n.OnConflict, _, _ = node.OnConflictAttr.Get(content)
	if node.MergeAttr.Has(content) {
		n.Merge, _, _ = node.MergeAttr.Get(content)
	}
	diags := slices.Concat(node.OnConflictAttr.Check(content), node.MergeAttr.Check(content))
	hasRule, hasMerge := node.OnConflictAttr.Has(content), node.MergeAttr.Has(content)
	if hasRule && hasMerge {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Conflicting conflict rules",
			Detail:  "Set either on_conflict or merge, not both: merge computes the value itself.",
			Subject: content.Attrs[node.MergeAttr.Name()].NameRange.Ptr()})
	}
	if !fanIn {
		for _, a := range []string{node.OnConflictAttr.Name(), node.MergeAttr.Name()} {
			if a == node.OnConflictAttr.Name() && n.Kind == node.KindSink {
				continue // it decides between input keys a target maps to one key (engine/sinkloop/collide.go)
			}
			if attr, ok := content.Attrs[a]; ok {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Conflict rule without fan-in",
					Detail:  fmt.Sprintf("%s has one input, so no two inputs can conflict and %s has no effect.", n.Address, a),
					Subject: attr.NameRange.Ptr()})
			}
		}
	}
	return diags
}

// elemRange is the range of the i-th input reference as written.
func (n *Node) elemRange(i int) hcl.Range {
	if i < len(n.elemRanges) {
		return n.elemRanges[i]
	}
	return n.InputRange
}

// FanIn reports whether n consumes the union of several inputs.
func (n *Node) FanIn() bool { return len(n.Inputs) > 1 }

// upstream describes n's input for its constructor; ok is false when an
// input did not resolve or did not build (that error is reported).
func upstream(n *Node) (*node.Upstream, bool) {
	if len(n.Inputs) == 0 || slices.ContainsFunc(n.Inputs, func(in *Node) bool { return in.Emits == "" }) {
		return nil, false
	}
	return &node.Upstream{Address: n.Inputs[0].Address, Type: n.Inputs[0].Emits}, true
}

// mixedInputs reports a fan-in whose inputs emit different kinds of data:
// its consumer could not read their union as one collection.
func mixedInputs(n *Node) *hcl.Diagnostic {
	for i, in := range n.Inputs[1:] {
		if in.Emits != n.Inputs[0].Emits {
			return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Type mismatch between inputs",
				Detail: fmt.Sprintf("Every input of %s must emit the same kind of data, but %s emits %s and %s emits %s. %s",
					n.Address, n.Inputs[0].Address, n.Inputs[0].Emits, in.Address, in.Emits, mismatchHint([]node.DataType{node.Records}, node.Objects)),
				Subject: n.inputRanges[i+1].Ptr()}
		}
	}
	return nil
}

// checkKnownConflicts reports, for a fan-in with on_conflict = "error",
// the keys that two inputs known at load time (static sources) hold with
// different values: that conflict would happen at every start.
func checkKnownConflicts(nodes []*Node) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, n := range nodes {
		if !n.FanIn() || n.Merge != nil || n.OnConflict != node.ConflictError {
			continue
		}
		seen := map[node.Key]int{} // key -> index of the first known input holding it
		known := map[int]map[node.Key]node.Record{}
		for i, in := range n.Inputs {
			k, ok := in.Impl().(node.KnownRecords)
			if !ok {
				continue
			}
			known[i] = map[node.Key]node.Record{}
			var clash []string
			for _, r := range k.KnownRecords() {
				known[i][r.Key] = r
				j, dup := seen[r.Key]
				if !dup {
					seen[r.Key] = i
					continue
				}
				if !sameValue(known[j][r.Key].Value, r.Value) {
					clash = append(clash, r.Key)
				}
			}
			if len(clash) > 0 {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Conflicting inputs",
					Detail: fmt.Sprintf("%s and an earlier input of %s hold %s with different values, and on_conflict is \"error\". Give the keys one value, or set on_conflict = \"first\" or \"last\", or a merge expression.",
						in.Address, n.Address, quoteKeys(clash)),
					Subject: n.inputRanges[i].Ptr()})
			}
		}
	}
	return diags
}

func quoteKeys(keys []string) string {
	const most = 5
	q := make([]string, 0, most)
	for i, k := range keys {
		if i == most {
			q = append(q, fmt.Sprintf("and %d more", len(keys)-most))
			break
		}
		q = append(q, fmt.Sprintf("%q", k))
	}
	return strings.Join(q, ", ")
}

// missingRange is where HCL reports a missing argument: the body's opening.
func missingRange(n *Node) hcl.Range {
	if n.Block.Body != nil {
		return n.Block.Body.MissingItemRange()
	}
	return n.Block.DeclRange
}
