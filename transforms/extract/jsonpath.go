package extract

import (
	"bytes"
	"fmt"
	"maps"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/pipeline/pipeline/internal/ctyconv"
	"github.com/pipeline/pipeline/internal/jpath"
)

// withJSONPath returns a child of ctx whose functions are ctx's plus
// jsonpath(). The functions are copied rather than inherited so that HCL's
// "did you mean" suggestions for a misspelt function name see all of them.
// The farthest context's table is cloned whole (much cheaper than copying
// it entry by entry, once per transform of a large configuration).
func withJSONPath(ctx *hcl.EvalContext) *hcl.EvalContext {
	var chain []*hcl.EvalContext
	for c := ctx; c != nil; c = c.Parent() {
		chain = append(chain, c)
	}
	var funcs map[string]function.Function
	for i := len(chain) - 1; i >= 0; i-- { // nearer contexts override farther ones
		if funcs == nil {
			funcs = maps.Clone(chain[i].Functions)
		} else {
			maps.Copy(funcs, chain[i].Functions)
		}
	}
	if funcs == nil {
		funcs = map[string]function.Function{}
	}
	funcs["jsonpath"] = jsonPathFunc()
	child := ctx.NewChild()
	child.Functions = funcs
	return child
}

// template is one parsed JSONPath template.
type template struct {
	t *jpath.Template
	// fields is set for a template that is one action made of field names
	// only ({.status.podIP}): eval then walks the value itself instead of
	// converting the whole value to Go first.
	fields []string
}

// parseTemplate parses a template.
func parseTemplate(src string) (*template, error) {
	t, err := jpath.Parse(src)
	if err != nil {
		return nil, err
	}
	return &template{t: t, fields: t.Fields()}, nil
}

// walkFields is what client-go's JSONPath (missing keys allowed) finds for
// a chain of field names, read from the value itself: a field of an object
// or map, nothing past a null, a missing field or anything else. The value
// found is converted as the general path converts it (through Go), so both
// paths agree (jsonpath_test.go checks it); only that value is converted.
func walkFields(v cty.Value, fields []string) (cty.Value, error) {
	for _, f := range fields {
		if v.IsNull() || !v.IsKnown() {
			return cty.NullVal(cty.DynamicPseudoType), nil
		}
		switch ty := v.Type(); {
		case ty.IsObjectType():
			if !ty.HasAttribute(f) {
				return cty.NullVal(cty.DynamicPseudoType), nil
			}
			v = v.GetAttr(f)
		case ty.IsMapType():
			k := cty.StringVal(f)
			if !v.HasIndex(k).True() {
				return cty.NullVal(cty.DynamicPseudoType), nil
			}
			v = v.Index(k)
		default:
			return cty.NullVal(cty.DynamicPseudoType), nil
		}
	}
	if v.IsNull() {
		return cty.NullVal(cty.DynamicPseudoType), nil
	}
	return ctyconv.ToCty(ctyconv.FromCty(v))
}

// templates caches parsed templates; mu guards the cache. A parsed
// template is read-only while it evaluates, so evaluations run unlocked.
type templates struct {
	mu    sync.Mutex
	cache map[string]*template
}

// maxTemplates bounds the cache for templates computed per object.
const maxTemplates = 256

func (ts *templates) get(src string) (*template, error) {
	if t, ok := ts.cache[src]; ok {
		return t, nil
	}
	t, err := parseTemplate(src)
	if err != nil {
		return nil, err
	}
	if len(ts.cache) < maxTemplates {
		ts.cache[src] = t
	}
	return t, nil
}

// eval runs a template against a value.
func (ts *templates) eval(src string, v cty.Value) (cty.Value, error) {
	ts.mu.Lock()
	t, err := ts.get(src)
	ts.mu.Unlock()
	if err != nil {
		return cty.NilVal, err
	}
	if t.fields != nil {
		return walkFields(v, t.fields)
	}
	return t.evalGo(ctyconv.FromCty(v))
}

// evalGo runs t against a Go value, with client-go's rules but for the
// order of a map's keys, which are visited sorted (internal/jpath). A
// template that prints text (literal text around the braces, or range)
// gives the printed string.
func (t *template) evalGo(data any) (cty.Value, error) {
	results, err := t.t.FindResults(data)
	if err != nil {
		return cty.NilVal, err
	}
	if t.t.Prints() {
		var buf bytes.Buffer
		for _, set := range results {
			if err := jpath.PrintResults(&buf, set); err != nil {
				return cty.NilVal, err
			}
		}
		return cty.StringVal(buf.String()), nil
	}
	var vals []any
	for _, set := range results {
		vals = append(vals, set...)
	}
	switch len(vals) {
	case 0:
		return cty.NullVal(cty.DynamicPseudoType), nil
	case 1:
		return ctyconv.ToCty(vals[0])
	}
	return ctyconv.ToCty(vals)
}

// jsonPathFunc is jsonpath(value, template). The template is parsed even
// when value is unknown, so a literal template is validated when the
// configuration loads (the schema evaluates run-time expressions once with
// unknown roots).
func jsonPathFunc() function.Function {
	ts := &templates{cache: map[string]*template{}}
	return function.New(&function.Spec{
		Description: "Evaluates a client-go JSONPath template against a value: the matched value, a list of several, or null.",
		Params: []function.Parameter{
			{Name: "object", Type: cty.DynamicPseudoType, AllowUnknown: true, AllowNull: true, AllowDynamicType: true},
			{Name: "template", Type: cty.String},
		},
		Type: function.StaticReturnType(cty.DynamicPseudoType),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			src := args[1].AsString()
			if !args[0].IsWhollyKnown() {
				ts.mu.Lock()
				_, err := ts.get(src)
				ts.mu.Unlock()
				if err != nil {
					return cty.NilVal, function.NewArgErrorf(1, "invalid JSONPath: %s", err)
				}
				return cty.DynamicVal, nil
			}
			v, err := ts.eval(src, args[0])
			if err != nil {
				return cty.NilVal, fmt.Errorf("jsonpath %s: %w", src, err)
			}
			return v, nil
		},
	})
}
