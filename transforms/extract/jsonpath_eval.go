package extract

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

// The evaluation of a JSONPath template over a decoded JSON value
// (map[string]any, []any, string, int64, float64, bool, nil: what
// ctyconv.FromCty gives). Templates are parsed by client-go and evaluated
// here, with client-go's rules (kubectl's), but for one: a map's keys are
// visited in sorted order where `*` and `..` walk it. client-go walks a
// Go map in Go's random order, so jsonpath(object, "{.metadata.labels.*}")
// gave the same object's values in a different order from call to call,
// and a sink rewrote an unchanged target.

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
func findResults(steps []step, data any) ([][]any, error) {
	var out [][]any
	for _, s := range steps {
		found, err := eval(s.node, []any{data})
		if err != nil {
			return nil, err
		}
		if !s.isRange {
			out = append(out, found)
			continue
		}
		for _, v := range found {
			inner, err := findResults(s.body, v)
			if err != nil {
				return nil, err
			}
			out = append(out, inner...)
		}
	}
	return out, nil
}

// eval evaluates one node against every current value.
func eval(n jsonpath.Node, in []any) ([]any, error) {
	switch n := n.(type) {
	case *jsonpath.ListNode:
		cur := in
		for _, inner := range n.Nodes {
			var err error
			if cur, err = eval(inner, cur); err != nil {
				return nil, err
			}
		}
		return cur, nil
	case *jsonpath.TextNode:
		return []any{n.Text}, nil
	case *jsonpath.FieldNode:
		return evalField(in, n.Value), nil
	case *jsonpath.ArrayNode:
		return evalArray(in, n)
	case *jsonpath.FilterNode:
		return evalFilter(in, n)
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
			found, err := eval(l, in)
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
// found (and yields nothing further), a missing one is not.
func evalField(in []any, name string) []any {
	var out []any
	for _, v := range in {
		if m, ok := v.(map[string]any); ok {
			if e, ok := m[name]; ok {
				out = append(out, e)
			}
		}
	}
	return out
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
func evalFilter(in []any, n *jsonpath.FilterNode) ([]any, error) {
	var out []any
	for _, v := range in {
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%v is not array or slice and cannot be filtered", v)
		}
		for _, e := range list {
			pass, err := filterPasses(n, e)
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

func filterPasses(n *jsonpath.FilterNode, e any) (bool, error) {
	lefts, err := eval(n.Left, []any{e})
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
	rights, err := eval(n.Right, []any{e})
	if err != nil {
		return false, err
	}
	right, ok, err := single(rights)
	if !ok || err != nil {
		return false, err
	}
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

// printResults writes one action's results as client-go's Execute does:
// lists and maps as JSON, other values as fmt prints them, separated by
// spaces.
func printResults(b *bytes.Buffer, results []any) error {
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
