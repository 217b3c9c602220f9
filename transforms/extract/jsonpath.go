package extract

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"k8s.io/client-go/util/jsonpath"

	"github.com/pipeline/pipeline/internal/ctyconv"
)

// withJSONPath returns a child context that adds jsonpath() to ctx.
func withJSONPath(ctx *hcl.EvalContext) *hcl.EvalContext {
	child := ctx.NewChild()
	child.Functions = map[string]function.Function{"jsonpath": jsonPathFunc()}
	return child
}

// jsonPathFunc evaluates a client-go JSONPath template against a value. The
// template is parsed even when the object is unknown, so a literal template
// is validated when the configuration loads.
func jsonPathFunc() function.Function {
	var mu sync.Mutex
	cache := map[string]*jsonpath.JSONPath{}
	parse := func(tmpl string) (*jsonpath.JSONPath, error) {
		mu.Lock()
		defer mu.Unlock()
		if jp, ok := cache[tmpl]; ok {
			return jp, nil
		}
		jp := jsonpath.New("jsonpath").AllowMissingKeys(true)
		if err := jp.Parse(tmpl); err != nil {
			return nil, err
		}
		if len(cache) < 1024 {
			cache[tmpl] = jp
		}
		return jp, nil
	}
	return function.New(&function.Spec{
		Description: "Evaluates a JSONPath template (client-go syntax) against a value.",
		Params: []function.Parameter{
			{Name: "object", Type: cty.DynamicPseudoType, AllowUnknown: true, AllowNull: true, AllowDynamicType: true},
			{Name: "template", Type: cty.String},
		},
		Type: function.StaticReturnType(cty.DynamicPseudoType),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			jp, err := parse(args[1].AsString())
			if err != nil {
				return cty.NilVal, function.NewArgErrorf(1, "invalid JSONPath: %s", err)
			}
			if !args[0].IsWhollyKnown() {
				return cty.DynamicVal, nil
			}
			mu.Lock() // a parsed JSONPath is not safe for concurrent use
			results, err := jp.FindResults(ctyconv.FromCty(args[0]))
			mu.Unlock()
			if err != nil {
				return cty.NilVal, fmt.Errorf("jsonpath %s: %w", args[1].AsString(), err)
			}
			var vals []any
			for _, set := range results {
				for _, r := range set {
					vals = append(vals, plain(r))
				}
			}
			switch len(vals) {
			case 0:
				return cty.NullVal(cty.DynamicPseudoType), nil
			case 1:
				return ctyconv.ToCty(vals[0])
			}
			return ctyconv.ToCty(vals)
		},
	})
}

// plain unwraps a reflect.Value from jsonpath into a JSON-like Go value.
func plain(v reflect.Value) any {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if !v.IsValid() || !v.CanInterface() {
		return nil
	}
	return v.Interface()
}
