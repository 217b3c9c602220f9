package extract

import (
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
		"spec":     map[string]any{"hostNetwork": true, "containers": []any{map[string]any{"ports": []any{map[string]any{"containerPort": 8080}}}}},
		"status":   map[string]any{"podIP": "10.0.0.1", "podIPs": []any{map[string]any{"ip": "10.0.0.1"}, map[string]any{"ip": "fd00::1"}}},
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
		{`{range .status.podIPs[*]}{.ip};{end}`, `"10.0.0.1;fd00::1;"`}, // range templates are parsed per call
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
