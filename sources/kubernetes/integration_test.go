//go:build integration

package kubernetes

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeline/pipeline/engine/node"
)

func TestPods(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	k := newKube(t)
	defer k.close()
	ns := k.ns
	k.pod(t, ns, "a", map[string]string{"app": "web"})
	k.pod(t, ns, "b", map[string]string{"app": "web"})
	l := start(t, fmt.Sprintf("resource = %q\nnamespace = %q\nselector = \"app=web\"\n"+
		"ignore_fields = [\"{.metadata.managedFields}\", \"{.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']}\"]",
		"pods", ns))
	defer l.stop()
	l.synced(t)
	if diff := cmp.Diff([]string{ns + "/a", ns + "/b"}, l.keys()); diff != "" {
		t.Fatalf("initial keys (-want +got)\n%s", diff)
	}
	if n := len(l.out.Batches()); n != 1 {
		t.Errorf("initial state in %d batches, want 1", n)
	}
	// ignore_fields: the informer cache itself holds no managedFields and no
	// last-applied annotation.
	for _, obj := range l.src.current.store.List() {
		u := obj.(*object).more.whole
		if u.GetManagedFields() != nil || u.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"] != "" {
			t.Errorf("cached %s keeps ignored fields: %v %v", u.GetName(), u.GetManagedFields(), u.GetAnnotations())
		}
	}
	k.pod(t, ns, "c", map[string]string{"app": "web"})
	k.pod(t, ns, "other", map[string]string{"app": "db"})
	waitFor(t, "add of c", hasKey(l.out, ns+"/c"))
	// Status update: podIP appears in the record.
	ctx := context.Background()
	p, err := k.cs.CoreV1().Pods(ns).Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.PodIP = "10.244.0.7"
	if _, err := k.cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "podIP of a", func() bool {
		return attr(l.out.State()[ns+"/a"], "status", "podIP") == cty.StringVal("10.244.0.7")
	})
	// A label change that leaves the selector is a delete.
	k.relabel(t, ns, "b", map[string]string{"app": "db"})
	waitFor(t, "b leaving the selector", func() bool { return !hasKey(l.out, ns+"/b")() })
	k.deletePod(t, ns, "c")
	waitFor(t, "delete of c", func() bool { return !hasKey(l.out, ns+"/c")() })
	if diff := cmp.Diff([]string{ns + "/a"}, l.keys()); diff != "" {
		t.Errorf("keys (-want +got)\n%s", diff)
	}
	if err := l.stop(); err != nil {
		t.Errorf("Run = %v", err)
	}
}

func TestSelectorOperators(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	k := newKube(t)
	defer k.close()
	ns := k.ns
	k.pod(t, ns, "prod", map[string]string{"env": "prod", "tier": "web"})
	k.pod(t, ns, "staging", map[string]string{"env": "staging"})
	k.pod(t, ns, "dev", map[string]string{"env": "dev", "legacy": "true"})
	k.pod(t, ns, "none", nil)
	block := func(key, op string, values ...string) string {
		s := fmt.Sprintf("selector {\n key = %q\n operator = %q\n", key, op)
		if len(values) > 0 {
			q := make([]string, len(values))
			for i, v := range values {
				q[i] = fmt.Sprintf("%q", v)
			}
			s += " values = [" + strings.Join(q, ", ") + "]\n"
		}
		return s + "}\n"
	}
	tests := []struct {
		name     string
		selector string
		want     []string
	}{
		{"=", block("env", "=", "prod"), []string{"prod"}},
		{"==", block("env", "==", "staging"), []string{"staging"}},
		{"!=", block("env", "!=", "prod"), []string{"dev", "none", "staging"}},
		{"in", block("env", "in", "prod", "staging"), []string{"prod", "staging"}},
		{"notin", block("env", "notin", "prod"), []string{"dev", "none", "staging"}},
		{"exists", block("legacy", "exists"), []string{"dev"}},
		{"!exists", block("legacy", "!exists"), []string{"none", "prod", "staging"}},
		{"blocks are ANDed", block("env", "exists") + block("tier", "=", "web"), []string{"prod"}},
		{"string", `selector = "env in (prod,dev),!legacy"`, []string{"prod"}},
		{"empty", ``, []string{"dev", "none", "prod", "staging"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []string
			for _, n := range tt.want {
				want = append(want, ns+"/"+n)
			}
			got := runOnce(t, fmt.Sprintf("resource = \"pods\"\nnamespace = %q\n%s", ns, tt.selector))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestNamespaceOrAll(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	k := newKube(t)
	defer k.close()
	other := newKube(t)
	defer other.close()
	run := map[string]string{"run": k.ns}
	k.pod(t, k.ns, "p", run)
	k.pod(t, other.ns, "q", run)
	all := runOnce(t, fmt.Sprintf("resource = \"pods\"\nselector = \"run=%s\"", k.ns))
	want := []string{k.ns + "/p", other.ns + "/q"}
	sort.Strings(want)
	if diff := cmp.Diff(want, all); diff != "" {
		t.Errorf("all namespaces (-want +got)\n%s", diff)
	}
	one := runOnce(t, fmt.Sprintf("resource = \"pods\"\nnamespace = %q\nselector = \"run=%s\"", other.ns, k.ns))
	if diff := cmp.Diff([]string{other.ns + "/q"}, one); diff != "" {
		t.Errorf("one namespace (-want +got)\n%s", diff)
	}
}

func TestIndexLookup(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	k := newKube(t)
	defer k.close()
	k.pod(t, k.ns, "p1", map[string]string{"app": "web"})
	k.pod(t, k.ns, "p2", map[string]string{"app": "db"})
	k.pod(t, k.ns, "nolabel", nil)
	l := start(t, fmt.Sprintf("resource = \"pods\"\nnamespace = %q\nindex_by = [\"{.metadata.labels.app}\", \"metadata.name\"]", k.ns))
	defer l.stop()
	l.synced(t)
	if diff := cmp.Diff([]string{"db:p2", "web:p1"}, l.keys()); diff != "" {
		t.Errorf("keys (-want +got)\n%s", diff)
	}
	if got := testutil.ToFloat64(l.src.current.m.Skipped.WithLabelValues("index_missing")); got != 1 {
		t.Errorf("index_missing = %v, want 1", got)
	}
	obj, ok, err := l.src.Lookup(context.Background(), "web:p1")
	if err != nil || !ok || obj.GetName() != "p1" || obj.GetNamespace() != k.ns {
		t.Errorf("Lookup(web:p1) = %v, %v, %v", obj, ok, err)
	}
	if _, ok, _ := l.src.Lookup(context.Background(), "web:p2"); ok {
		t.Error("Lookup of a missing key found something")
	}
}

func TestSingleResource(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	k := newKube(t)
	defer k.close()
	ctx := context.Background()
	cms := k.cs.CoreV1().ConfigMaps(k.ns)
	for _, name := range []string{"haproxy-config", "other"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "1"}}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	l := start(t, fmt.Sprintf("resource = \"configmaps\"\nnamespace = %q\nname = \"haproxy-config\"", k.ns))
	defer l.stop()
	l.synced(t)
	key := k.ns + "/haproxy-config"
	if diff := cmp.Diff([]string{key}, l.keys()); diff != "" {
		t.Fatalf("keys (-want +got)\n%s", diff)
	}
	cm, err := cms.Get(ctx, "haproxy-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["v"] = "2"
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "update", func() bool { return attr(l.out.State()[key], "data", "v") == cty.StringVal("2") })
	if err := cms.Delete(ctx, "haproxy-config", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "delete", func() bool { return len(l.out.Keys()) == 0 })
}

func TestMetadataOnly(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	k := newKube(t)
	defer k.close()
	k.pod(t, k.ns, "p", map[string]string{"app": "web"})
	l := start(t, fmt.Sprintf("resource = \"pods\"\nnamespace = %q\nmetadata_only = true", k.ns))
	defer l.stop()
	l.synced(t)
	v := l.out.State()[k.ns+"/p"]
	if attr(v, "metadata", "labels", "app") != cty.StringVal("web") || attr(v, "kind") != cty.StringVal("Pod") ||
		attr(v, "apiVersion") != cty.StringVal("v1") {
		t.Errorf("metadata record lacks labels or kind: %#v", v)
	}
	if attr(v, "spec") != cty.NilVal {
		t.Error("metadata_only record holds the spec")
	}
}

// TestProjectedPods runs the source with the projection the compiler derives
// for the flagship extract: records hold only what is read (plus identity),
// a write to a field nobody reads emits nothing, and adds, status changes,
// selector exits and deletes behave as with whole objects.
func TestProjectedPods(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	k := newKube(t)
	defer k.close()
	ns := k.ns
	k.pod(t, ns, "a", map[string]string{"app": "web"})
	proj := &node.Paths{}
	proj.Add("status", "podIP")
	l := startProjected(t, fmt.Sprintf("resource = \"pods\"\nnamespace = %q\nselector = \"app=web\"", ns), proj)
	defer l.stop()
	l.synced(t)
	rec := l.out.State()[ns+"/a"]
	// The record's value holds what the graph reads and nothing else: the
	// identity the source decodes for itself stays in the cache's metadata.
	got := map[string]bool{}
	var walk func(prefix string, v cty.Value)
	walk = func(prefix string, v cty.Value) {
		if !v.Type().IsObjectType() {
			return
		}
		for name := range v.Type().AttributeTypes() {
			got[prefix+name] = true
			walk(prefix+name+".", v.GetAttr(name))
		}
	}
	walk("", rec)
	want := map[string]bool{"status": true} // the pod has no IP yet: status.podIP is absent
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("projected record fields (-want +got)\n%s", diff)
	}
	// The cache holds the emitted value itself, not a second copy.
	for _, obj := range l.src.current.store.List() {
		if o, ok := obj.(*object); !ok || o.more != nil {
			t.Errorf("cache holds %T, want the record object", obj)
		}
	}
	if u, ok, err := l.src.Lookup(context.Background(), ns+"/a"); err != nil || !ok || u.GetName() != "a" || u.GetNamespace() != ns || u.GetUID() == "" {
		t.Errorf("Lookup = %v, %v, %v", u, ok, err)
	}
	ctx := context.Background()
	batches := len(l.out.Batches())
	k.relabel(t, ns, "a", map[string]string{"app": "web", "unread": "x"}) // nobody reads labels
	p, err := k.cs.CoreV1().Pods(ns).Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.PodIP = "10.244.0.9"
	if _, err := k.cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "podIP of a", func() bool {
		return attr(l.out.State()[ns+"/a"], "status", "podIP") == cty.StringVal("10.244.0.9")
	})
	if n := len(l.out.Batches()) - batches; n != 1 {
		t.Errorf("%d batches for a label write and a podIP write, want 1 (the label is not read)", n)
	}
	k.pod(t, ns, "b", map[string]string{"app": "web"})
	waitFor(t, "add of b", hasKey(l.out, ns+"/b"))
	k.relabel(t, ns, "b", map[string]string{"app": "db"})
	waitFor(t, "b leaving the selector", func() bool { return !hasKey(l.out, ns+"/b")() })
	k.deletePod(t, ns, "a")
	waitFor(t, "delete of a", func() bool { return !hasKey(l.out, ns+"/a")() })
	if err := l.stop(); err != nil {
		t.Errorf("Run = %v", err)
	}
}
