package extract

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/internal/ctyconv"
)

func TestJSONPathFunc(t *testing.T) {
	o, err := ctyconv.ToCty(map[string]any{
		"metadata": map[string]any{"name": "a", "labels": map[string]any{"app": "web"}},
		"spec": map[string]any{"hostNetwork": true, "containers": []any{map[string]any{"ports": []any{map[string]any{"containerPort": 8080}}}},
			"groups": []any{map[string]any{"ports": []any{}}, map[string]any{"ports": []any{1, 2}}}},
		"status": map[string]any{"podIP": "10.0.0.1", "podIPs": []any{map[string]any{"ip": "10.0.0.1"}, map[string]any{"ip": "fd00::1"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := jsonPathFunc()
	for _, tc := range []struct{ tmpl, want string }{
		{"{.status.podIP}", `"10.0.0.1"`},
		{"{.status.podIPs[*].ip}", `["10.0.0.1","fd00::1"]`},
		{"{.spec.nodeName}", `null`},
		{"{.metadata.labels}", `{"app":"web"}`},
		{"{.spec.hostNetwork}", `true`},
		{"{.spec.containers[0].ports[0].containerPort}", `8080`},
		{"{.metadata.name}/{.status.podIP}", `"a/10.0.0.1"`},
		{`{range .status.podIPs[*]}{.ip},{end}`, `"10.0.0.1,fd00::1,"`},
		{`{range .status.podIPs[*]}{.ip};{end}`, `"10.0.0.1;fd00::1;"`},
		{`{range .spec.none[*]}{.ports[0]}{end}`, `""`}, // client-go's walk panicked on an empty range's body
		{"{.spec.groups[*].ports[*]}", `[1,2]`},         // client-go's walk stopped at the empty list
	} {
		t.Run(tc.tmpl, func(t *testing.T) {
			for range 2 { // a cached template gives the same answer twice
				v, err := f.Call([]cty.Value{o, cty.StringVal(tc.tmpl)})
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tc.want, ctyconv.String(v)); d != "" {
					t.Fatalf("(-want +got):\n%s", d)
				}
			}
		})
	}
}

func TestJSONPathFuncErrors(t *testing.T) {
	f := jsonPathFunc()
	if _, err := f.Call([]cty.Value{cty.DynamicVal, cty.StringVal("{.a[")}); err == nil || !strings.Contains(err.Error(), "invalid JSONPath") {
		t.Fatalf("unknown object, bad template: %v", err)
	}
	if _, err := f.Call([]cty.Value{cty.EmptyObjectVal, cty.StringVal("{.a[")}); err == nil {
		t.Fatal("known object, bad template: no error")
	}
	for _, src := range []string{"{range .a[*]}{.b}", "{.a}{end}", "{range .a[*]}{range .b}{end}"} {
		if _, err := f.Call([]cty.Value{cty.DynamicVal, cty.StringVal(src)}); err == nil || !strings.Contains(err.Error(), "invalid JSONPath") {
			t.Errorf("%s: %v, want invalid JSONPath (a range and its end unpaired)", src, err)
		}
	}
	if v, err := f.Call([]cty.Value{cty.NullVal(cty.DynamicPseudoType), cty.StringVal("{.a}")}); err != nil || !v.IsNull() {
		t.Fatalf("null object: %v, %v", v, err)
	}
}

func TestJSONPathInTransform(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, objects, `
key   = jsonpath(object, "{.status.podIP}")
value = { ips = jsonpath(object, "{.status.podIPs[*].ip}"), node = jsonpath(object, "{.spec.nodeName}") }
`)
		r.reset(pod(t, "a", "Running", "10.0.0.1", "fd00::1"), pod(t, "b", "Pending")) // b: null key, skipped
		want := map[string]string{"10.0.0.1": `{"ips":["10.0.0.1","fd00::1"],"node":null}`}
		if d := cmp.Diff(want, r.state()); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
	})
}

// TestJSONPathFieldsSameAsGeneral: a template of field names only is read
// from the value itself; on random values and templates it gives what the
// general path (the value converted to Go, client-go's JSONPath) gives.
func TestJSONPathFieldsSameAsGeneral(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	names := []string{"a", "b", "status", "podIP", "x-y"}
	var gen func(depth int) cty.Value
	gen = func(depth int) cty.Value {
		switch k := rng.IntN(9); {
		case depth > 3 || k == 0:
			return cty.StringVal(fmt.Sprint("s", rng.IntN(5)))
		case k == 1:
			return cty.NumberIntVal(int64(rng.IntN(100)))
		case k == 2:
			return cty.NullVal(cty.String)
		case k == 3:
			return cty.BoolVal(rng.IntN(2) == 0)
		case k == 4:
			return cty.TupleVal([]cty.Value{gen(depth + 1), gen(depth + 1)})
		case k == 5:
			m := map[string]cty.Value{}
			for range rng.IntN(3) {
				m[names[rng.IntN(len(names))]] = cty.StringVal(fmt.Sprint("m", rng.IntN(5)))
			}
			if len(m) == 0 {
				return cty.MapValEmpty(cty.String)
			}
			return cty.MapVal(m)
		default:
			m := map[string]cty.Value{}
			for range rng.IntN(4) {
				m[names[rng.IntN(len(names))]] = gen(depth + 1)
			}
			return cty.ObjectVal(m)
		}
	}
	fast := 0
	for i := range 5000 {
		v := gen(0)
		var fields []string
		for range 1 + rng.IntN(3) {
			fields = append(fields, names[rng.IntN(len(names))])
		}
		src := "{." + strings.Join(fields, ".") + "}"
		tmpl, err := parseTemplate(src)
		if err != nil {
			t.Fatal(err)
		}
		if tmpl.fields == nil {
			continue
		}
		fast++
		got, gerr := walkFields(v, tmpl.fields)
		want, werr := tmpl.evalGo(ctyconv.FromCty(v))
		if (gerr != nil) != (werr != nil) || (gerr == nil && !got.RawEquals(want)) {
			t.Fatalf("case %d: %s of %#v: fields %#v (%v), general %#v (%v)", i, src, v, got, gerr, want, werr)
		}
	}
	if fast < 4000 {
		t.Fatalf("only %d of 5000 templates took the field path", fast)
	}
	for _, src := range []string{"{.a[0]}", "{.a.*}", "{..a}", "x{.a}", "{.a}{.b}", "{range .a}{end}", "{.}"} {
		if tmpl, err := parseTemplate(src); err != nil || tmpl.fields != nil {
			t.Errorf("%s: fields %v (%v), want the general path", src, tmpl.fields, err)
		}
	}
}

// TestJSONPathMapOrder: `*` and `..` visit a map's keys in sorted order,
// so a template gives one answer for one value however often it runs
// (client-go's walk follows Go's random map order).
func TestJSONPathMapOrder(t *testing.T) {
	labels := map[string]any{}
	for i := range 40 {
		labels[fmt.Sprintf("k%02d", i)] = fmt.Sprint("v", i)
	}
	pods := map[string]any{}
	for i := range 20 {
		pods[fmt.Sprintf("p%02d", i)] = map[string]any{"ip": fmt.Sprintf("10.0.0.%d", i)}
	}
	o, err := ctyconv.ToCty(map[string]any{"metadata": map[string]any{"labels": labels}, "pods": pods})
	if err != nil {
		t.Fatal(err)
	}
	var sortedValues, sortedIPs []string
	for i := range 40 {
		sortedValues = append(sortedValues, fmt.Sprintf("%q", fmt.Sprint("v", i)))
	}
	for i := range 20 {
		sortedIPs = append(sortedIPs, fmt.Sprintf("%q", fmt.Sprintf("10.0.0.%d", i)))
	}
	f := jsonPathFunc()
	for _, tc := range []struct{ tmpl, want string }{
		{"{.metadata.labels.*}", "[" + strings.Join(sortedValues, ",") + "]"},
		{"{.pods..ip}", "[" + strings.Join(sortedIPs, ",") + "]"},
		{"{.pods.*.ip}", "[" + strings.Join(sortedIPs, ",") + "]"},
		{"{range .metadata.labels.*}{@},{end}", `"` + strings.ReplaceAll(strings.Join(sortedValues, ","), `"`, "") + `,"`},
	} {
		t.Run(tc.tmpl, func(t *testing.T) {
			for range 100 {
				v, err := f.Call([]cty.Value{o, cty.StringVal(tc.tmpl)})
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tc.want, ctyconv.String(v)); d != "" {
					t.Fatalf("(-want +got):\n%s", d)
				}
			}
		})
	}
}
