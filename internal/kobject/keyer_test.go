package kobject

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func pod() map[string]any {
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata": map[string]any{
			"name":            "web-1",
			"namespace":       "shop",
			"resourceVersion": "7",
			"labels":          map[string]any{"app": "web", "app.kubernetes.io/name": "shop-web"},
			"annotations":     map[string]any{"kubectl.kubernetes.io/last-applied-configuration": "{}", "keep": "x"},
			"managedFields":   []any{map[string]any{"manager": "kubectl"}},
		},
		"spec": map[string]any{
			"priority": int64(5),
			"containers": []any{
				map[string]any{"name": "a", "env": []any{"x"}, "image": "a:1"},
				map[string]any{"name": "b", "env": []any{"y"}, "image": "b:1"},
			},
		},
		"status": map[string]any{"podIP": "10.0.0.7", "hostIP": nil},
	}
}

func TestNormalizePath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"{.metadata.name}", "{.metadata.name}"},
		{"metadata.name", "{.metadata.name}"},
		{".metadata.name", "{.metadata.name}"},
		{"{.metadata.labels['app.kubernetes.io/name']}", `{.metadata.labels.app\.kubernetes\.io/name}`},
		{"metadata.labels['a.b']", `{.metadata.labels.a\.b}`},
	}
	for _, tt := range tests {
		got, err := NormalizePath(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("NormalizePath(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "  ", "{.a['x}"} {
		if _, err := NormalizePath(bad); err == nil {
			t.Errorf("NormalizePath(%q): no error", bad)
		}
	}
}

func TestKeyer(t *testing.T) {
	tests := []struct {
		name    string
		exprs   []string
		obj     map[string]any
		want    string
		missing bool
	}{
		{name: "default", obj: pod(), want: "shop/web-1"},
		{name: "default cluster scoped", obj: map[string]any{"metadata": map[string]any{"name": "node-1"}}, want: "node-1"},
		{name: "default no name", obj: map[string]any{"metadata": map[string]any{}}, missing: true},
		{name: "composite", exprs: []string{"{.metadata.namespace}", "{.metadata.name}"}, obj: pod(), want: "shop:web-1"},
		{name: "bare path", exprs: []string{"status.podIP"}, obj: pod(), want: "10.0.0.7"},
		{name: "quoted label", exprs: []string{"{.metadata.labels['app.kubernetes.io/name']}"}, obj: pod(), want: "shop-web"},
		{name: "number", exprs: []string{"{.spec.priority}"}, obj: pod(), want: "5"},
		{name: "list", exprs: []string{"{.spec.containers[*].name}"}, obj: pod(), want: "a,b"},
		{name: "missing", exprs: []string{"{.metadata.labels.tier}"}, obj: pod(), missing: true},
		{name: "null", exprs: []string{"{.status.hostIP}"}, obj: pod(), missing: true},
		{name: "missing second", exprs: []string{"{.metadata.name}", "{.status.nodeName}"}, obj: pod(), missing: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, errs := NewKeyer(tt.exprs)
			if errs != nil {
				t.Fatal(errs)
			}
			got, err := k.Key(tt.obj)
			if tt.missing {
				if !errors.Is(err, ErrMissing) {
					t.Fatalf("Key = %q, %v; want ErrMissing", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Key = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestDecodeIndexByDiagnostics(t *testing.T) {
	c := content(t, `index_by = ["{.metadata.name}", "{.a}{.b}", "{.metadata[}"]`)
	_, diags := DecodeIndexBy(c)
	if diff := cmp.Diff([]string{"Invalid index_by path", "Invalid index_by path"}, summaries(diags)); diff != "" {
		t.Fatalf("%s\n%s", diff, diags)
	}
	// Each diagnostic points at its own list element.
	if got := []int{diags[0].Subject.Start.Column, diags[1].Subject.Start.Column}; got[0] != 33 || got[1] != 45 {
		t.Errorf("columns %v, want [33 45]", got)
	}
}

func TestIndex(t *testing.T) {
	ix := NewIndex()
	steps := []struct {
		op, id, key string
		want        []Change
	}{
		{"put", "a/1", "k", []Change{{Key: "k", Winner: "a/1", WinnerChanged: true}}},
		{"put", "a/1", "k", []Change{{Key: "k", Winner: "a/1"}}}, // content update
		{"put", "b/2", "k", nil}, // duplicate, loses
		{"put", "b/2", "k", nil}, // duplicate update
		{"put", "0/0", "k", []Change{{Key: "k", Winner: "0/0", WinnerChanged: true}}}, // new winner
		{"remove", "0/0", "", []Change{{Key: "k", Winner: "a/1", WinnerChanged: true}}},
		{"put", "a/1", "m", []Change{{Key: "k", Winner: "b/2", WinnerChanged: true}, {Key: "m", Winner: "a/1", WinnerChanged: true}}},
		{"remove", "b/2", "", []Change{{Key: "k", WinnerChanged: true}}},
		{"remove", "b/2", "", nil},
		{"remove", "a/1", "", []Change{{Key: "m", WinnerChanged: true}}},
	}
	for i, s := range steps {
		var got []Change
		if s.op == "put" {
			got = ix.Put(s.id, s.key)
		} else {
			got = ix.Remove(s.id)
		}
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Fatalf("step %d %s %s: (-want +got)\n%s", i, s.op, s.id, diff)
		}
	}
	if ix.Len() != 0 {
		t.Errorf("not empty: %d objects", ix.Len())
	}
}

func TestSameContent(t *testing.T) {
	a, b := pod(), pod()
	b["metadata"].(map[string]any)["resourceVersion"] = "8"
	if !SameContent(a, b) {
		t.Error("objects differing only in resourceVersion differ")
	}
	if a["metadata"].(map[string]any)["resourceVersion"] != "7" {
		t.Error("SameContent modified its argument")
	}
	b["status"].(map[string]any)["podIP"] = "10.0.0.8"
	if SameContent(a, b) {
		t.Error("objects with different podIP are the same")
	}
}

// TestKeyerMapOrder: index_by paths that walk a map (`*`, `..`) visit its
// keys in sorted order, so one object has one key however often it is
// keyed (client-go's walk follows Go's random map order).
func TestKeyerMapOrder(t *testing.T) {
	labels := map[string]any{}
	for i := range 20 {
		labels[fmt.Sprintf("k%02d", i)] = fmt.Sprint("v", i)
	}
	var sorted []string
	for i := range 20 {
		sorted = append(sorted, fmt.Sprint("v", i))
	}
	obj := map[string]any{"metadata": map[string]any{"name": "a", "labels": labels}}
	for _, tc := range []struct{ expr, want string }{
		{"{.metadata.labels.*}", strings.Join(sorted, ",")},
		{"{.metadata..k03}", "v3"},
		{"{..labels.*}", strings.Join(sorted, ",")},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			k, errs := NewKeyer([]string{tc.expr})
			if errs != nil {
				t.Fatal(errs)
			}
			for range 100 {
				got, err := k.Key(obj)
				if err != nil || got != tc.want {
					t.Fatalf("Key = %q, %v; want %q", got, err, tc.want)
				}
			}
		})
	}
}

// TestNewKeyerUnpairedRange: a range or end in an index_by path is
// refused when the path is compiled (client-go's parser takes it, and its
// walk then repeats or fails on every object).
func TestNewKeyerUnpairedRange(t *testing.T) {
	for expr, want := range map[string]string{"{range .metadata.labels.*}": "range without end", "{end}": "not in range, nothing to end"} {
		if _, errs := NewKeyer([]string{expr}); errs == nil || errs[0] == nil || errs[0].Error() != want {
			t.Errorf("%s: errors %v, want %q", expr, errs, want)
		}
	}
}
