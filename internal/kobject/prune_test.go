package kobject

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"
)

func TestPruner(t *testing.T) {
	tests := []struct {
		name  string
		exprs []string
		check func(obj map[string]any) any // returns what must be nil/absent
		want  any
	}{
		{name: "managedFields", exprs: []string{"{.metadata.managedFields}"},
			check: func(o map[string]any) any { return o["metadata"].(map[string]any)["managedFields"] }},
		{name: "quoted annotation", exprs: []string{"{.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']}"},
			check: func(o map[string]any) any { return o["metadata"].(map[string]any)["annotations"] },
			want:  map[string]any{"keep": "x"}},
		{name: "every container env", exprs: []string{"{.spec.containers[*].env}"},
			check: func(o map[string]any) any { return o["spec"].(map[string]any)["containers"] },
			want:  []any{map[string]any{"name": "a", "image": "a:1"}, map[string]any{"name": "b", "image": "b:1"}}},
		{name: "one container", exprs: []string{"{.spec.containers[-1].image}"},
			check: func(o map[string]any) any { return o["spec"].(map[string]any)["containers"].([]any)[1] },
			want:  map[string]any{"name": "b", "env": []any{"y"}}},
		{name: "wildcard values", exprs: []string{"{.metadata.labels.*}"},
			check: func(o map[string]any) any { return o["metadata"].(map[string]any)["labels"] },
			want:  map[string]any{}},
		{name: "whole status, bare", exprs: []string{"status"},
			check: func(o map[string]any) any { return o["status"] }},
		{name: "missing path", exprs: []string{"{.spec.nothing.here}"},
			check: func(o map[string]any) any { return len(o["spec"].(map[string]any)) }, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, errs := NewPruner(tt.exprs)
			if errs != nil {
				t.Fatal(errs)
			}
			obj := pod()
			p.Prune(obj)
			if diff := cmp.Diff(tt.want, tt.check(obj)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestPrunerRejects(t *testing.T) {
	for _, bad := range []string{
		"{.spec.containers[?(@.name=='a')].env}",
		"{..managedFields}",
		"{.spec.containers[0,1].env}",
		"{.spec.containers[0:1].env}",
		"{.spec.containers[*]}",
		"{.spec.containers[0]}",
		"{.a}{.b}",
		"",
	} {
		_, errs := NewPruner([]string{bad})
		if errs == nil || errs[0] == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestValue(t *testing.T) {
	v, err := Value(map[string]any{"metadata": map[string]any{"name": "x"}, "n": int64(3)})
	if err != nil {
		t.Fatal(err)
	}
	want := cty.ObjectVal(map[string]cty.Value{"metadata": cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("x")}), "n": cty.NumberIntVal(3)})
	if !v.RawEquals(want) {
		t.Errorf("got %#v", v)
	}
	if _, err := Value(map[string]any{"bad": make(chan int)}); err == nil {
		t.Error("no error for an unconvertible object")
	}
}

func TestNewMetricsTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	m1, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	if m1.Skipped != m2.Skipped {
		t.Error("second registration did not reuse the collector")
	}
}
