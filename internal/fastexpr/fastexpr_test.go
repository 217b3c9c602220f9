package fastexpr

import (
	"encoding/json"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

var exprs = []string{
	`try(object.status.podIP, "") != ""`,
	`object.status.podIP`,
	`object.metadata.labels["app"]`,
	`object.metadata.labels.app == "web"`,
	`object.spec.containers[0].name`,
	`object.spec.containers[1].name`,
	`object.spec.containers[-1].name`,
	`object.spec.containers[0.5].name`,
	`object.spec.containers["0"].name`,
	`object.missing`,
	`object.status`,
	`try(object.missing, object.status.podIP, "none")`,
	`try(object.missing)`,
	`try(upper(object.status.podIP), "x")`,
	`!(object.ready)`,
	`!object.status.podIP`,
	`object.ready && object.status.podIP != ""`,
	`object.ready || true`,
	`object.flag == "true"`,
	`object.n == 1`,
	`object.n != "1"`,
	`null == object.missing`,
	`object.nothing == null`,
	`"${object.status.podIP}"`,
	`"a-${object.status.podIP}"`,
	`"lit"`,
	`"pods.${object.status.podIP}.${object.metadata.labels.app}"`,
	`"n-${object.n}"`,
	`"x-${object.nothing}"`,
	`"x-${object.unknown}"`,
	`{ a = object.secret, b = object.unknown }`,
	`[object.secret, object.unknown]`,
	`"%{ if object.ready }y%{ endif }"`,
	`{ pod = object.metadata.labels.app, "ip" = object.status.podIP }`,
	`{ a = 1, a = object.n }`,
	`{ (object.flag) = 1 }`,
	`{ "${object.status.podIP}" = 1 }`,
	`[object.n, object.status.podIP, "x"]`,
	`[object.missing]`,
	`{ a = object.missing }`,
	`each.value`,
	`each.key == "a"`,
	`(object.status).podIP`,
	`object.secret`,
	`object.secret == "s"`,
	`try(object.secret, "")`,
	`"a-${object.secret}"`,
	`"${object.secret}"`,
	`{ s = object.secret }`,
	`[object.secret]`,
	`object.unknown`,
	`try(object.unknown, "u")`,
	`object.unknown == "x"`,
	`nope.x`,
	`object.status.podIP == object.status.podIP`,
	`object.tuple[1]`,
	`object.map.k`,
	`object.map["k"]`,
	`object.map.missing`,
}

var objects = []string{
	`{"status":{"podIP":"10.0.0.1"},"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c0"},{"name":"c1"}]},"ready":true,"flag":true,"n":1,"tuple":[1,"x"],"nothing":null}`,
	`{"status":{"podIP":""},"metadata":{"labels":{}},"ready":false,"flag":"true","n":"1"}`,
	`{"status":{},"metadata":{},"spec":{"containers":[]}}`,
	`{"status":null,"metadata":{"labels":null},"ready":"yes"}`,
	`{}`,
	`null`,
	`"a string"`,
}

func evalContext(obj cty.Value) *hcl.EvalContext {
	base := &hcl.EvalContext{Functions: map[string]function.Function{"try": tryfunc.TryFunc, "upper": stdlib.UpperFunc}}
	ctx := base.NewChild()
	vars := map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal("a"), "value": cty.NumberIntVal(2)})}
	if obj != cty.NilVal {
		if obj.Type().IsObjectType() {
			attrs := obj.AsValueMap()
			if attrs == nil {
				attrs = map[string]cty.Value{}
			}
			attrs["secret"] = cty.StringVal("s").Mark("sensitive")
			attrs["unknown"] = cty.UnknownVal(cty.String)
			attrs["map"] = cty.MapVal(map[string]cty.Value{"k": cty.StringVal("v")})
			obj = cty.ObjectVal(attrs)
		}
		vars["object"] = obj
	}
	ctx.Variables = vars
	return ctx
}

func decode(t testing.TB, src string) cty.Value {
	ty, err := ctyjson.ImpliedType([]byte(src))
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	v, err := ctyjson.Unmarshal([]byte(src), ty)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return v
}

// same checks the fast path against HCL for one expression and context,
// and reports whether the fast path answered.
func same(t testing.TB, src string, ctx *hcl.EvalContext) bool {
	expr, diags := hclsyntax.ParseExpression([]byte(src), "x.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		return false
	}
	want, wantDiags := expr.Value(ctx)
	fx := Compile(expr, ctx)
	answered := false
	if fx.fast != nil {
		_, answered = fx.fast(ctx)
	}
	got, gotDiags := fx.Value(ctx)
	if wantDiags.HasErrors() != gotDiags.HasErrors() {
		t.Fatalf("%s: HCL errors %v, fast errors %v", src, wantDiags, gotDiags)
	}
	if !wantDiags.HasErrors() && !got.RawEquals(want) {
		t.Fatalf("%s: HCL gives %#v, fast gives %#v", src, want, got)
	}
	return answered
}

// fields answers paths from a built value, as a packed record does from
// its slots.
type fields struct{ v cty.Value }

func (f fields) Field(path []string) (cty.Value, bool) {
	v, ok := f.v, true
	for _, name := range path {
		if v, ok = attr(v, name); !ok {
			return cty.NilVal, false
		}
	}
	return v, true
}

// sameOnFields checks that, with object bound to Fields, the fast path
// either gives up or gives what HCL gives on the built object.
func sameOnFields(t testing.TB, src string, ctx *hcl.EvalContext) bool {
	expr, diags := hclsyntax.ParseExpression([]byte(src), "x.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		return false
	}
	obj, ok := ctx.Variables["object"]
	if !ok {
		return false
	}
	lazy := ctx.Parent().NewChild()
	lazy.Variables = map[string]cty.Value{"object": FieldsVal(fields{obj}), "each": ctx.Variables["each"]}
	got, answered := Compile(expr, ctx).FastValue(lazy)
	if !answered {
		return false
	}
	want, wantDiags := expr.Value(ctx)
	if wantDiags.HasErrors() || !got.RawEquals(want) {
		t.Fatalf("%s: HCL gives %#v %v on the built object, the fast path on its fields %#v", src, want, wantDiags, got)
	}
	return true
}

// TestSameAsHCL evaluates every expression over every object both ways,
// and again with the object bound to Fields.
func TestSameAsHCL(t *testing.T) {
	for _, o := range objects {
		ctx := evalContext(decode(t, o))
		for _, src := range exprs {
			same(t, src, ctx)
			sameOnFields(t, src, ctx)
		}
	}
	same(t, `object.x`, evalContext(cty.NilVal)) // no such variable
}

// TestFastPathAnswers: the shapes the flagship and the examples use are
// answered without HCL.
func TestFastPathAnswers(t *testing.T) {
	ctx := evalContext(decode(t, objects[0]))
	for _, src := range []string{
		`try(object.status.podIP, "") != ""`,
		`object.status.podIP`,
		`object.metadata.labels["app"]`,
		`object.spec.containers[1].name`,
		`object.ready && object.status.podIP != ""`,
		`"${object.status.podIP}"`,
		`"pods.${object.status.podIP}.${object.metadata.labels.app}"`,
		`{ pod = object.metadata.labels.app, "ip" = object.status.podIP }`,
		`[object.n, object.status.podIP, "x"]`,
		`try(object.missing, object.status.podIP, "none")`,
	} {
		if !same(t, src, ctx) {
			t.Errorf("%s: the fast path did not answer", src)
		}
		// An absent attribute is not an answer Fields gives: try cannot
		// move past it without HCL, so the caller builds the object.
		if !sameOnFields(t, src, ctx) && src != `try(object.missing, object.status.podIP, "none")` {
			t.Errorf("%s: the fast path did not answer on the object's fields", src)
		}
	}
	// try is only HCL's try.
	other := &hcl.EvalContext{Functions: map[string]function.Function{"try": stdlib.UpperFunc}}
	expr, _ := hclsyntax.ParseExpression([]byte(`try("a")`), "x.hcl", hcl.InitialPos)
	if Compile(expr, other).Fast() {
		t.Error("a function named try that is not HCL's try got a fast path")
	}
}

// FuzzSameAsHCL: for any expression and any JSON object, the fast path
// gives HCL's answer.
func FuzzSameAsHCL(f *testing.F) {
	for _, e := range exprs {
		for _, o := range objects {
			f.Add(e, o)
		}
	}
	f.Fuzz(func(t *testing.T, src, obj string) {
		if !json.Valid([]byte(obj)) || len(src) > 512 || len(obj) > 4096 {
			return
		}
		ty, err := ctyjson.ImpliedType([]byte(obj))
		if err != nil {
			return
		}
		v, err := ctyjson.Unmarshal([]byte(obj), ty)
		if err != nil {
			return
		}
		ctx := evalContext(v)
		same(t, src, ctx)
		sameOnFields(t, src, ctx)
	})
}

// BenchmarkFlagshipWhere: the flagship's where, by HCL and by the fast path.
func BenchmarkFlagshipWhere(b *testing.B) {
	expr, diags := hclsyntax.ParseExpression([]byte(`try(object.status.podIP, "") != ""`), "x.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	ctx := evalContext(decode(b, objects[0]))
	for _, c := range []struct {
		name string
		e    hcl.Expression
	}{{"hcl", expr}, {"fast", Compile(expr, ctx)}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v, diags := c.e.Value(ctx); diags.HasErrors() || !v.True() {
					b.Fatal(v, diags)
				}
			}
		})
	}
}
