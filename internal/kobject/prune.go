package kobject

import (
	"errors"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"k8s.io/client-go/util/jsonpath"

	"github.com/pipeline/pipeline/schema"
)

type stepKind int

const (
	stepField stepKind = iota // one map key
	stepAll                   // every element of a list ([*]) or value of a map (.*)
	stepIndex                 // one list element ([n], negative counts from the end)
)

type step struct {
	kind  stepKind
	name  string
	index int
}

// Pruner removes the ignore_fields paths from objects. It is immutable and
// safe for concurrent use.
type Pruner struct {
	paths  [][]step
	exprs  []string
	ranges []hcl.Range // of each path's list element, when decoded from a config
}

// NewPruner compiles ignore_fields expressions; errs[i] is the error of
// exprs[i]. Only plain paths are accepted: fields, [n], [*] and .*, ending in
// a field or .*; filters, unions, slices and recursive descent are not.
func NewPruner(exprs []string) (*Pruner, []error) {
	p := &Pruner{}
	errs := make([]error, len(exprs))
	failed := false
	for i, e := range exprs {
		steps, err := compilePrunePath(e)
		if err != nil {
			errs[i], failed = err, true
			continue
		}
		p.paths = append(p.paths, steps)
		p.exprs = append(p.exprs, e)
	}
	if !failed {
		errs = nil
	}
	return p, errs
}

// DecodeIgnoreFields reads and compiles ignore_fields.
func DecodeIgnoreFields(c *schema.Content) (*Pruner, hcl.Diagnostics) {
	exprs, rng, diags := IgnoreFieldsAttr.Get(c)
	if diags.HasErrors() {
		return &Pruner{}, diags
	}
	p, errs := NewPruner(exprs)
	ranges := listElemRanges(c, IgnoreFieldsAttr.Name(), len(exprs), rng)
	for i := range exprs {
		if errs != nil && errs[i] != nil {
			diags = append(diags, pathDiag("Invalid ignore_fields path", "ignore_fields", exprs[i], errs[i], ranges[i]))
			continue
		}
		p.ranges = append(p.ranges, ranges[i])
	}
	return p, diags
}

func compilePrunePath(expr string) ([]step, error) {
	norm, err := NormalizePath(expr)
	if err != nil {
		return nil, err
	}
	list, err := parsePath(norm)
	if err != nil {
		return nil, err
	}
	steps := make([]step, 0, len(list.Nodes))
	for _, n := range list.Nodes {
		s, err := pruneStep(n)
		if err != nil {
			return nil, err
		}
		steps = append(steps, s)
	}
	if last := steps[len(steps)-1]; last.kind == stepIndex || (last.kind == stepAll && isArrayNode(list.Nodes[len(list.Nodes)-1])) {
		return nil, errors.New("the path must end with a field name or .*; list elements cannot be removed")
	}
	return steps, nil
}

func isArrayNode(n jsonpath.Node) bool { _, ok := n.(*jsonpath.ArrayNode); return ok }

func pruneStep(n jsonpath.Node) (step, error) {
	switch x := n.(type) {
	case *jsonpath.FieldNode:
		if x.Value == "" {
			return step{}, errors.New("empty field name")
		}
		return step{kind: stepField, name: x.Value}, nil
	case *jsonpath.WildcardNode:
		return step{kind: stepAll}, nil
	case *jsonpath.ArrayNode:
		p := x.Params
		if !p[0].Known && !p[1].Known && !p[2].Known {
			return step{kind: stepAll}, nil
		}
		if p[0].Known && p[1].Derived && !p[2].Known {
			return step{kind: stepIndex, index: p[0].Value}, nil
		}
		return step{}, errors.New("slices are not supported; use [n] or [*]")
	}
	return step{}, fmt.Errorf("%s is not supported here; use fields, [n], [*] and .*", n.Type())
}

// Exprs returns the expressions as written.
func (p *Pruner) Exprs() []string { return append([]string(nil), p.exprs...) }

// Empty reports whether there is nothing to remove.
func (p *Pruner) Empty() bool { return p == nil || len(p.paths) == 0 }

// Prune removes every configured path from obj, in place. Missing paths
// are ignored.
func (p *Pruner) Prune(obj map[string]any) {
	if p == nil {
		return
	}
	for _, steps := range p.paths {
		prune(obj, steps)
	}
}

func prune(v any, steps []step) {
	s, rest := steps[0], steps[1:]
	switch x := v.(type) {
	case map[string]any:
		switch {
		case s.kind == stepField && len(rest) == 0:
			delete(x, s.name)
		case s.kind == stepField:
			if child, ok := x[s.name]; ok {
				prune(child, rest)
			}
		case s.kind == stepAll && len(rest) == 0:
			clear(x)
		case s.kind == stepAll:
			for _, child := range x {
				prune(child, rest)
			}
		}
	case []any:
		if len(rest) == 0 {
			return
		}
		switch s.kind {
		case stepAll:
			for _, child := range x {
				prune(child, rest)
			}
		case stepIndex:
			i := s.index
			if i < 0 {
				i += len(x)
			}
			if i >= 0 && i < len(x) {
				prune(x[i], rest)
			}
		}
	}
}

// PrunePrefix is one ignore_fields path as far as it names fields.
type PrunePrefix struct {
	Fields []string  // leading field names, up to the first [*], [n] or .*
	Exact  bool      // Fields are the whole path: the field itself is removed
	Expr   string    // as written
	Range  hcl.Range // of the list element; zero when not decoded from a config
}

// Prefixes returns every path's leading fields.
func (p *Pruner) Prefixes() []PrunePrefix {
	out := make([]PrunePrefix, len(p.paths))
	for i, steps := range p.paths {
		for _, s := range steps {
			if s.kind != stepField {
				break
			}
			out[i].Fields = append(out[i].Fields, s.name)
		}
		out[i].Exact = len(out[i].Fields) == len(steps)
		out[i].Expr = p.exprs[i]
		if i < len(p.ranges) {
			out[i].Range = p.ranges[i]
		}
	}
	return out
}
