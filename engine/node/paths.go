package node

import (
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Paths is the set of object paths a graph reads from a source's objects:
// a tree of field names in which a node marked whole is read with
// everything below it. The zero value reads nothing; nil reads everything.
// The compiler derives it from the expressions of every consumer, so a
// source can decode only what is read and skip the rest on the wire.
type Paths struct {
	whole  bool
	fields map[string]*Paths
	// at holds where expressions read exactly this path (the first
	// maxRanges), so a source can point at the expression when the path
	// cannot exist (Source.Project).
	at []hcl.Range
}

// maxRanges bounds the expression ranges a path keeps.
const maxRanges = 4

// WholeObject returns paths that read everything.
func WholeObject() *Paths { return &Paths{whole: true} }

// Whole reports whether p reads the whole subtree (nil does).
func (p *Paths) Whole() bool { return p == nil || p.whole }

// Add records that path is read; an empty path reads the whole subtree.
func (p *Paths) Add(path ...string) { p.add(path) }

// AddAt adds path as Add does and records that the expression at r reads it.
func (p *Paths) AddAt(r hcl.Range, path ...string) {
	if leaf := p.add(path); leaf != nil {
		leaf.addRanges(r)
	}
}

// add adds path and returns where it ends, or nil when a whole subtree
// above its end reads it already.
func (p *Paths) add(path []string) *Paths {
	for _, f := range path {
		if p.whole {
			return nil
		}
		p = p.child(f)
	}
	p.whole, p.fields = true, nil
	return p
}

// child returns the paths below field f, adding it when absent.
func (p *Paths) child(f string) *Paths {
	if p.fields == nil {
		p.fields = map[string]*Paths{}
	}
	c := p.fields[f]
	if c == nil {
		c = &Paths{}
		p.fields[f] = c
	}
	return c
}

func (p *Paths) addRanges(rs ...hcl.Range) {
	for _, r := range rs {
		if len(p.at) < maxRanges && r.Filename != "" {
			p.at = append(p.at, r)
		}
	}
}

// Ranges returns where expressions read exactly this path (AddAt).
func (p *Paths) Ranges() []hcl.Range {
	if p == nil {
		return nil
	}
	return p.at
}

// Fields returns the names of the fields read below p, sorted; none when
// p is whole.
func (p *Paths) Fields() []string {
	if p.Whole() {
		return nil
	}
	return slices.Sorted(maps.Keys(p.fields))
}

// Merge adds every path of q to p.
func (p *Paths) Merge(q *Paths) {
	if q != nil {
		p.addRanges(q.at...)
	}
	if q.Whole() {
		p.whole, p.fields = true, nil
		return
	}
	for f, c := range q.fields {
		if p.whole {
			return
		}
		p.child(f).Merge(c)
	}
}

// Field returns the paths read below field f, and false when f is not read
// at all. Below a whole subtree every field is read whole.
func (p *Paths) Field(f string) (*Paths, bool) {
	if p.Whole() {
		return nil, true
	}
	c, ok := p.fields[f]
	return c, ok
}

// List returns the read paths as sorted JSONPath-like strings
// (".status.podIP"); "." alone means the whole object.
func (p *Paths) List() []string {
	if p.Whole() {
		return []string{"."}
	}
	var out []string
	var walk func(q *Paths, prefix string)
	walk = func(q *Paths, prefix string) {
		if q.whole {
			out = append(out, prefix)
			return
		}
		for f, c := range q.fields {
			walk(c, prefix+"."+f)
		}
	}
	walk(p, "")
	sort.Strings(out)
	return out
}

func (p *Paths) String() string { return strings.Join(p.List(), " ") }

// ObjectReader is implemented by a transform whose expressions read its
// input objects. ObjectPaths returns what it reads; a warning names each
// expression that reads a whole object (which makes the source keep whole
// objects).
type ObjectReader interface {
	ObjectPaths() (*Paths, hcl.Diagnostics)
}

// Projector is implemented by a source that can decode only the paths the
// graph reads. The compiler calls Project once, before the graph runs,
// with what every consumer reads (nil: whole objects). Warnings it returns
// (an ignore_fields path that an expression reads) are shown by validate.
type Projector interface {
	Project(p *Paths) hcl.Diagnostics
}

// FieldLister is implemented by a source that knows which fields its
// objects or items have: from its configuration (a Kubernetes resource's
// API types), or from the data at hand (a sample of the files a files
// source reads). ObjectFields returns the names under path (empty: the
// top level), sorted; nil when they are not known. Editors complete
// `object.`, `record.value.` and `item.` with them.
type FieldLister interface {
	ObjectFields(path []string) []string
}

// CallPaths claims a function call for ExprPaths: it returns the paths
// under root the call reads, and false when the call is not its kind (its
// arguments are then walked as usual).
type CallPaths func(call *hclsyntax.FunctionCallExpr) (paths [][]string, ok bool)

// ExprPaths adds to p the paths below the variable root that expr reads,
// and returns the range of every reference that reads root as a whole
// (passed to a function, indexed by a computed key).
func ExprPaths(p *Paths, root string, expr hcl.Expression, call CallPaths) []hcl.Range {
	if expr == nil {
		return nil
	}
	claimed := map[hcl.Range]bool{}
	if se, ok := expr.(hclsyntax.Expression); ok && call != nil {
		_ = hclsyntax.VisitAll(se, func(n hclsyntax.Node) hcl.Diagnostics {
			fc, ok := n.(*hclsyntax.FunctionCallExpr)
			if !ok {
				return nil
			}
			paths, ok := call(fc)
			if !ok {
				return nil
			}
			for _, path := range paths {
				p.AddAt(fc.Range(), path...)
			}
			for _, a := range fc.Args {
				for _, tr := range a.Variables() {
					claimed[tr.SourceRange()] = true
				}
			}
			return nil
		})
	}
	var whole []hcl.Range
	for _, tr := range expr.Variables() {
		if tr.RootName() != root || claimed[tr.SourceRange()] {
			continue
		}
		path := TraversalPath(tr[1:])
		if len(path) == 0 {
			whole = append(whole, tr.SourceRange())
		}
		p.AddAt(tr.SourceRange(), path...)
	}
	return whole
}

// TraversalPath returns the leading field names of a relative traversal,
// stopping at the first step that is not a field (a list index, a computed
// key): everything below that point is read.
func TraversalPath(tr hcl.Traversal) []string {
	var path []string
	for _, s := range tr {
		switch s := s.(type) {
		case hcl.TraverseAttr:
			path = append(path, s.Name)
		case hcl.TraverseIndex:
			if s.Key.Type() != cty.String || !s.Key.IsKnown() || s.Key.IsNull() {
				return path
			}
			path = append(path, s.Key.AsString())
		default:
			return path
		}
	}
	return path
}

// WholeObjectSummary is the summary of the warning an ObjectReader gives
// for an expression that reads a whole object.
const WholeObjectSummary = "Expression reads the whole object"

// WholeObjectWarnings turns the ranges ExprPaths returns into warnings.
func WholeObjectWarnings(ranges []hcl.Range) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, r := range ranges {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: WholeObjectSummary,
			Detail: "This expression uses the object as a whole (passed to a function, or indexed by a computed key), so " +
				"which of its fields are read cannot be known. Read named fields, such as object.status.podIP or " +
				"jsonpath(object, \"{.status.podIP}\") with a literal template, to decode only what is used.",
			Subject: r.Ptr()})
	}
	return diags
}
