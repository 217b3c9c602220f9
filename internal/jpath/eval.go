package jpath

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	gotemplate "k8s.io/client-go/third_party/forked/golang/template"
	"k8s.io/client-go/util/jsonpath"
)

// Template is a parsed JSONPath template. It is read-only once made, so
// one Template may evaluate in several goroutines at once.
type Template struct {
	steps []step
	// prints is set when the template prints text: literal text around
	// its actions, or a range.
	prints bool
	// fields is set for a template that is one action made of field
	// names only ({.status.podIP}), which FindResults walks directly.
	fields []string
	// strict makes a field that no current value has an error.
	strict bool
}

// Parse parses src with client-go's parser and groups its range and end
// actions. A range without an end, or an end without a range, is an
// error (client-go's parser takes them, and its walk then repeats or
// fails).
func Parse(src string) (*Template, error) {
	p, err := jsonpath.Parse("jsonpath", src)
	if err != nil {
		return nil, err
	}
	t := &Template{fields: fieldChain(p.Root)}
	if t.steps, err = compileSteps(p.Root.Nodes); err != nil {
		return nil, err
	}
	for _, s := range t.steps {
		if _, ok := s.node.(*jsonpath.ListNode); !ok || s.isRange {
			t.prints = true
		}
	}
	return t, nil
}

// Strict returns a copy of t in which a field that no current value has
// is an error ("x is not found"), as with client-go's
// AllowMissingKeys(false); t itself finds nothing there.
func (t *Template) Strict() *Template {
	c := *t
	c.strict = true
	return &c
}

// Prints reports whether the template prints text (literal text between
// actions, or a range), so that its results are read as PrintResults
// writes them rather than as values.
func (t *Template) Prints() bool { return t.prints }

// Fields returns the field names of a template that is one action of
// field names only ({.status.podIP} gives [status podIP]), else nil.
func (t *Template) Fields() []string { return slices.Clone(t.fields) }

// FindResults evaluates t against data, a decoded JSON value
// (map[string]any, []any, string, int64, float64, json.Number, bool, nil): what each
// top-level action finds, in order, a range adding its body's for each
// value. A map's values are found in the sorted order of their keys where
// `*` and `..` walk it.
func (t *Template) FindResults(data any) ([][]any, error) {
	if t.fields != nil {
		v, err := t.walkFields(data)
		if err != nil {
			return nil, err
		}
		return [][]any{v}, nil
	}
	return findResults(t.steps, data, t.strict)
}

// walkFields is what eval finds for a chain of field names, without the
// slices eval builds at each step.
func (t *Template) walkFields(v any) ([]any, error) {
	for _, f := range t.fields {
		m, ok := v.(map[string]any)
		if ok {
			v, ok = m[f]
		}
		if !ok {
			if t.strict {
				return nil, notFound(f)
			}
			return nil, nil
		}
	}
	return []any{v}, nil
}

func notFound(field string) error { return fmt.Errorf("%s is not found", field) }

// fieldChain returns the field names of a template that is one action of
// field names only, else nil.
func fieldChain(root *jsonpath.ListNode) []string {
	if len(root.Nodes) != 1 {
		return nil
	}
	list, ok := root.Nodes[0].(*jsonpath.ListNode)
	if !ok || len(list.Nodes) == 0 {
		return nil
	}
	var names []string
	for _, n := range list.Nodes {
		f, ok := n.(*jsonpath.FieldNode)
		if !ok || f.Value == "" {
			return nil
		}
		names = append(names, f.Value)
	}
	return names
}

// step is one part of a template at its top level: text, an action, or a
// range whose body runs on each value its action finds.
type step struct {
	node jsonpath.Node // *jsonpath.TextNode or *jsonpath.ListNode
	// body is set for a range: the steps up to its end.
	body    []step
	isRange bool
}

// compileSteps groups a parsed template's top-level nodes into steps,
// each range with its body. An end without a range, or a range without
// an end, is an error.
func compileSteps(nodes []jsonpath.Node) ([]step, error) {
	steps, _, err := stepsUntilEnd(nodes, false)
	return steps, err
}

// stepsUntilEnd reads steps up to the end of nodes or, inRange, up to the
// action holding end; it returns the nodes after that end.
func stepsUntilEnd(nodes []jsonpath.Node, inRange bool) ([]step, []jsonpath.Node, error) {
	var out []step
	for i, n := range nodes {
		list, ok := n.(*jsonpath.ListNode)
		if !ok {
			out = append(out, step{node: n})
			continue
		}
		head, kw, err := stripKeyword(list)
		if err != nil {
			return nil, nil, err
		}
		switch kw {
		case "end":
			if !inRange {
				return nil, nil, errors.New("not in range, nothing to end")
			}
			return out, nodes[i+1:], nil
		case "range":
			body, rest, err := stepsUntilEnd(nodes[i+1:], true)
			if err != nil {
				return nil, nil, err
			}
			more, rest, err := stepsUntilEnd(rest, inRange)
			out = append(append(out, step{node: head, body: body, isRange: true}), more...)
			return out, rest, err
		default:
			out = append(out, step{node: list})
		}
	}
	if inRange {
		return nil, nil, errors.New("range without end")
	}
	return out, nil, nil
}

// stripKeyword returns the action without its range or end keyword, and
// the keyword. client-go evaluates `range` as the current value (the rest
// of the action follows it) and `end` as nothing.
func stripKeyword(list *jsonpath.ListNode) (*jsonpath.ListNode, string, error) {
	kw := ""
	var rest []jsonpath.Node
	for _, n := range list.Nodes {
		id, ok := n.(*jsonpath.IdentifierNode)
		if !ok {
			rest = append(rest, n)
			continue
		}
		if (id.Name != "range" && id.Name != "end") || kw != "" {
			return nil, "", fmt.Errorf("unrecognized identifier %v", id.Name)
		}
		kw = id.Name
	}
	return &jsonpath.ListNode{NodeType: list.NodeType, Nodes: rest}, kw, nil
}

// findResults evaluates steps against data: what each top-level action
// finds, in order, a range adding its body's for each value.
func findResults(steps []step, data any, strict bool) ([][]any, error) {
	var out [][]any
	for _, s := range steps {
		found, err := eval(s.node, []any{data}, strict)
		if err != nil {
			return nil, err
		}
		if !s.isRange {
			out = append(out, found)
			continue
		}
		for _, v := range found {
			inner, err := findResults(s.body, v, strict)
			if err != nil {
				return nil, err
			}
			out = append(out, inner...)
		}
	}
	return out, nil
}

// eval evaluates one node against every current value.
func eval(n jsonpath.Node, in []any, strict bool) ([]any, error) {
	switch n := n.(type) {
	case *jsonpath.ListNode:
		cur := in
		for _, inner := range n.Nodes {
			var err error
			if cur, err = eval(inner, cur, strict); err != nil {
				return nil, err
			}
		}
		return cur, nil
	case *jsonpath.TextNode:
		return []any{n.Text}, nil
	case *jsonpath.FieldNode:
		return evalField(in, n.Value, strict)
	case *jsonpath.ArrayNode:
		return evalArray(in, n)
	case *jsonpath.FilterNode:
		return evalFilter(in, n, strict)
	case *jsonpath.IntNode:
		return repeat(in, n.Value), nil
	case *jsonpath.FloatNode:
		return repeat(in, n.Value), nil
	case *jsonpath.BoolNode:
		return repeat(in, n.Value), nil
	case *jsonpath.WildcardNode:
		var out []any
		for _, v := range in {
			out = append(out, children(v)...)
		}
		return out, nil
	case *jsonpath.RecursiveNode:
		return descend(in), nil
	case *jsonpath.UnionNode:
		var out []any
		for _, l := range n.Nodes {
			found, err := eval(l, in, strict)
			if err != nil {
				return nil, err
			}
			out = append(out, found...)
		}
		return out, nil
	case *jsonpath.IdentifierNode:
		return nil, fmt.Errorf("%s must begin an action", n.Name)
	}
	return nil, fmt.Errorf("unexpected node %v", n)
}

func repeat(in []any, v any) []any {
	out := make([]any, len(in))
	for i := range out {
		out[i] = v
	}
	return out
}

// evalField is the field name of each map; a field that holds null is
// found (and yields nothing further), a missing one is not. strict, a
// field found in none of the values (there being some) is an error.
func evalField(in []any, name string, strict bool) ([]any, error) {
	var out []any
	for _, v := range in {
		if m, ok := v.(map[string]any); ok {
			if e, ok := m[name]; ok {
				out = append(out, e)
			}
		}
	}
	if strict && len(out) == 0 && len(in) > 0 {
		return nil, notFound(name)
	}
	return out, nil
}

// children are a map's values in the sorted order of their keys, a list's
// elements, or a string's bytes (as client-go's walk gives them).
func children(v any) []any {
	switch x := v.(type) {
	case map[string]any:
		out := make([]any, 0, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out = append(out, x[k])
		}
		return out
	case []any:
		return x
	case string:
		out := make([]any, len(x))
		for i := range len(x) {
			out[i] = x[i]
		}
		return out
	}
	return nil
}

// descend is `..`: each value that has children, then what descend finds
// in them, depth first.
func descend(in []any) []any {
	var out []any
	for _, v := range in {
		if kids := children(v); len(kids) > 0 {
			out = append(out, v)
			out = append(out, descend(kids)...)
		}
	}
	return out
}

// evalArray is an index or a slice [start:end:step] of each list.
func evalArray(in []any, n *jsonpath.ArrayNode) ([]any, error) {
	var out []any
	for _, v := range in {
		if v == nil {
			continue
		}
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%T is not array or slice", v)
		}
		p := n.Params // a copy: the node is shared by every call
		l := len(list)
		if !p[0].Known {
			p[0].Value = 0
		}
		if p[0].Value < 0 {
			p[0].Value += l
		}
		if !p[1].Known {
			p[1].Value = l
		}
		if p[1].Value < 0 || (p[1].Value == 0 && p[1].Derived) {
			p[1].Value += l
		}
		if p[1].Value == p[0].Value {
			continue // zero elements asked for
		}
		switch {
		case p[0].Value >= l || p[0].Value < 0:
			return nil, fmt.Errorf("array index out of bounds: index %d, length %d", p[0].Value, l)
		case p[1].Value > l || p[1].Value < 0:
			return nil, fmt.Errorf("array index out of bounds: index %d, length %d", p[1].Value-1, l)
		case p[0].Value > p[1].Value:
			return nil, fmt.Errorf("starting index %d is greater than ending index %d", p[0].Value, p[1].Value)
		}
		step := 1
		if p[2].Known {
			if p[2].Value <= 0 {
				return nil, errors.New("step must be > 0")
			}
			step = p[2].Value
		}
		for i := p[0].Value; i < p[1].Value; i += step {
			out = append(out, list[i])
		}
	}
	return out, nil
}

// evalFilter is [?(...)]: the elements of each list for which the
// comparison holds, or whose left side exists.
func evalFilter(in []any, n *jsonpath.FilterNode, strict bool) ([]any, error) {
	var out []any
	for _, v := range in {
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%v is not array or slice and cannot be filtered", v)
		}
		for _, e := range list {
			pass, err := filterPasses(n, e, strict)
			if err != nil {
				return nil, err
			}
			if pass {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

func filterPasses(n *jsonpath.FilterNode, e any, strict bool) (bool, error) {
	lefts, err := eval(n.Left, []any{e}, strict)
	if n.Operator == "exists" {
		return len(lefts) > 0, nil
	}
	if err != nil {
		return false, err
	}
	left, ok, err := single(lefts)
	if !ok || err != nil {
		return false, err
	}
	rights, err := eval(n.Right, []any{e}, strict)
	if err != nil {
		return false, err
	}
	right, ok, err := single(rights)
	if !ok || err != nil {
		return false, err
	}
	left, right = comparable(left), comparable(right)
	switch n.Operator {
	case "<":
		return gotemplate.Less(left, right)
	case ">":
		return gotemplate.Greater(left, right)
	case "==":
		return gotemplate.Equal(left, right)
	case "!=":
		return gotemplate.NotEqual(left, right)
	case "<=":
		return gotemplate.LessEqual(left, right)
	case ">=":
		return gotemplate.GreaterEqual(left, right)
	}
	return false, fmt.Errorf("unrecognized filter operator %s", n.Operator)
}

// comparable is v as a filter compares it: a number kept as its exact
// text (json.Number, beyond int64) compares as a float64, as a number
// in the filter does.
func comparable(v any) any {
	if n, ok := v.(json.Number); ok {
		if f, err := n.Float64(); err == nil {
			return f
		}
	}
	return v
}

// single is the one value a side of a comparison finds; not ok when it
// finds none (the element does not pass).
func single(vs []any) (any, bool, error) {
	switch len(vs) {
	case 0:
		return nil, false, nil
	case 1:
		return vs[0], true, nil
	}
	return nil, false, errors.New("can only compare one element at a time")
}

// PrintResults writes one action's results as client-go's Execute does:
// lists and maps as JSON, other values as fmt prints them, separated by
// spaces.
func PrintResults(b *bytes.Buffer, results []any) error {
	for i, r := range results {
		switch r.(type) {
		case map[string]any, []any:
			js, err := json.Marshal(r) // sorts map keys
			if err != nil {
				return err
			}
			b.Write(js)
		case nil:
			b.WriteString("null")
		default:
			fmt.Fprint(b, r)
		}
		if i != len(results)-1 {
			b.WriteByte(' ')
		}
	}
	return nil
}
