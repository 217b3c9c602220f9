package kubernetes

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/schema"
	"github.com/zclconf/go-cty/cty"
)

const netpol = `
object = {
  apiVersion = "networking.k8s.io/v1"
  kind       = "NetworkPolicy"
  metadata   = { name = "default-deny", namespace = record.key }
  spec       = { podSelector = {}, policyTypes = [record.value.mode] }
}
`

func build(t *testing.T, body string) (*Sink, []string) {
	t.Helper()
	n, diags := nodetest.Build(t, Spec(), body, nil)
	var sums []string
	for _, d := range diags {
		sums = append(sums, d.Summary)
	}
	if n.Sink == nil {
		return nil, sums
	}
	return n.Sink.(*Sink), sums
}

func TestSpecDiagnostics(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"ok", netpol, nil},
		{"not a constructor", `object = record.value`, []string{"Invalid object"}},
		{"kind from the record", `object = { apiVersion = "v1", kind = record.value.kind, metadata = { name = "x" } }`, []string{"Invalid kind"}},
		{"no apiVersion", `object = { kind = "ConfigMap", metadata = { name = "x" } }`, []string{"Missing apiVersion"}},
		{"bad apiVersion", `object = { apiVersion = "a/b/c", kind = "ConfigMap", metadata = { name = "x" } }`, []string{"Invalid apiVersion"}},
		{"no metadata", `object = { apiVersion = "v1", kind = "ConfigMap" }`, []string{"Missing metadata"}},
		{"no name", `object = { apiVersion = "v1", kind = "ConfigMap", metadata = { namespace = "a" } }`, []string{"Missing metadata.name"}},
		{"namespace outside", `namespaces = ["b"]` + "\n" + `object = { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "x", namespace = "a" } }`, []string{"Namespace not allowed"}},
		{"bad label", `owner_label = "not a label"` + netpol, []string{"Invalid owner_label"}},
		{"bad value", `owner_value = "` + strings.Repeat("x", 70) + `"` + netpol, []string{"Invalid owner_value"}},
		{"in flight", `max_in_flight = 0` + netpol, []string{"Value out of range"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := build(t, tt.body)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPrepare(t *testing.T) {
	s, d := build(t, netpol+`
owner_reference = { apiVersion = "v1", kind = "Namespace", metadata = { name = record.key, uid = "u-1" } }
`)
	if d != nil {
		t.Fatal(d)
	}
	if s.manager != "pipeline.test" || !regexp.MustCompile(`^pipeline\.test\.[0-9a-f]{10}$`).MatchString(s.value) || s.label != defaultLabel {
		t.Errorf("defaults: manager %q, label %s=%s", s.manager, s.label, s.value)
	}
	e, err := s.Prepare(node.Record{Key: "shop", Value: cty.ObjectVal(map[string]cty.Value{"mode": cty.StringVal("Ingress")})})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"labels":{"pipeline.io/owner":"` + s.value + `"},` +
		`"name":"default-deny","namespace":"shop","ownerReferences":[{"apiVersion":"v1","controller":true,"kind":"Namespace","name":"shop","uid":"u-1"}]},` +
		`"spec":{"podSelector":{},"policyTypes":["Ingress"]}}`
	if e.Key != "shop/default-deny" || string(e.Data) != want {
		t.Errorf("entry %s %s\nwant %s", e.Key, e.Data, want)
	}
	if got := e.Value.GetAttr("spec").GetAttr("policyTypes").Index(cty.NumberIntVal(0)); got != cty.StringVal("Ingress") {
		t.Errorf("value: %#v", e.Value)
	}
	// A record the object cannot be built from is skipped with a reason.
	if _, err := s.Prepare(node.Record{Key: "shop", Value: cty.EmptyObjectVal}); err == nil {
		t.Error("a missing attribute built an object")
	}
}

func TestPrepareStatusAndNamespaces(t *testing.T) {
	s, d := build(t, `
status     = true
namespaces = ["a"]
object = {
  apiVersion = "example.com/v1"
  kind       = "Run"
  metadata   = { name = record.key, namespace = record.value.ns, labels = { x = "y" } }
  status     = { phase = "Done" }
}
`)
	if d != nil {
		t.Fatal(d)
	}
	rec := func(ns string) node.Record {
		return node.Record{Key: "r1", Value: cty.ObjectVal(map[string]cty.Value{"ns": cty.StringVal(ns)})}
	}
	e, err := s.Prepare(rec("a"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"example.com/v1","kind":"Run","metadata":{"name":"r1","namespace":"a"},"status":{"phase":"Done"}}`
	if string(e.Data) != want {
		t.Errorf("status entry %s, want %s", e.Data, want)
	}
	if _, err := s.Prepare(rec("b")); err == nil || !strings.Contains(err.Error(), "not one of namespaces") {
		t.Errorf("namespace b: %v", err)
	}
}

// TestOwned: what an object shows is the part its field manager's field
// set (managedFields) names, as the API server names it: an associative
// list's elements by key, a set's by value, so other managers' elements
// and fields are left out, and a field whose ownership moved to a hand
// edit is missing.
func TestOwned(t *testing.T) {
	// The sink's field set of {"c":[{"name":"app","image":"x"}],"s":["a"],"l":[...],"m":{"a":1}}:
	// c is a list keyed by name, s a set, l atomic.
	const fs = `{"f:spec":{"f:c":{"k:{\"name\":\"app\"}":{".":{},"f:name":{},"f:image":{}}},"f:s":{"v:\"a\"":{}},"f:l":{},"f:m":{"f:a":{}}}}`
	tests := []struct{ live, want string }{
		{`{"c":[{"name":"side","image":"y"},{"name":"app","image":"x","env":[{"name":"B"}]}]}`, `{"c":[{"image":"x","name":"app"}]}`}, // another manager's element and field
		{`{"c":[{"name":"side","image":"y"}]}`, `{"c":[]}`},                                                                           // the sink's element removed
		{`{"s":["b","a"]}`, `{"s":["a"]}`},                                                                                            // another manager's set member
		{`{"l":[{"p":80},{"p":81}],"m":{"a":1,"b":2}}`, `{"l":[{"p":80},{"p":81}],"m":{"a":1}}`},                                      // an atomic list whole; a default beside the sink's field
		{`{"m":{"b":2}}`, `{"m":{}}`},                                                                                                 // the sink's field gone
	}
	for _, tt := range tests {
		var spec map[string]any
		if err := json.Unmarshal([]byte(tt.live), &spec); err != nil {
			t.Fatal(err)
		}
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "X",
			"metadata": map[string]any{"name": "n", "namespace": "ns", "annotations": map[string]any{legacyAppliedAnnotation: "{}"}}, "spec": spec}}
		o.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "pipeline.x", Operation: metav1.ManagedFieldsOperationApply,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{"f:` + legacyAppliedAnnotation + `":{}}},` + fs[1:])}})
		got, err := json.Marshal(owned(o, fieldSet(o, "pipeline.x", "", metav1.ManagedFieldsOperationApply)))
		if err != nil {
			t.Fatal(err)
		}
		want := `{"apiVersion":"v1","kind":"X","metadata":{"name":"n","namespace":"ns"},"spec":` + tt.want + `}`
		if string(got) != want {
			t.Errorf("owned part of %s:\n got %s\nwant %s", tt.live, got, want)
		}
	}
}

// TestEditedOnly: a conflict is a hand edit when every field it names is
// held, by managers other than the sink's, through updates only.
func TestEditedOnly(t *testing.T) {
	entry := func(manager string, op metav1.ManagedFieldsOperationType, fs string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fs)}
	}
	const port = `{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{"f:targetPort":{}}}}}`
	const field = `.spec.ports[port=80,protocol="TCP"].targetPort`
	edit := entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, port)
	apply := entry("other", metav1.ManagedFieldsOperationApply, port)
	self := entry("pipeline.x", metav1.ManagedFieldsOperationUpdate, port)
	for _, tt := range []struct {
		entries []metav1.ManagedFieldsEntry
		fields  []string
		want    bool
	}{
		{[]metav1.ManagedFieldsEntry{edit}, []string{field}, true},
		{[]metav1.ManagedFieldsEntry{edit, apply}, []string{field}, false},
		{[]metav1.ManagedFieldsEntry{apply}, []string{field}, false},
		{[]metav1.ManagedFieldsEntry{self}, []string{field}, false},
		{[]metav1.ManagedFieldsEntry{edit}, []string{field, ".data.x"}, false},
	} {
		if got := editedOnly(tt.entries, "pipeline.x", tt.fields); got != tt.want {
			t.Errorf("editedOnly(%v, %v) = %v, want %v", tt.entries, tt.fields, got, tt.want)
		}
	}
}

func TestFieldDiff(t *testing.T) {
	before := map[string]any{"metadata": map[string]any{"name": "x", "resourceVersion": "1"},
		"spec": map[string]any{"a": "1", "gone": true, "l": []any{"x"}}}
	after := map[string]any{"metadata": map[string]any{"name": "x", "resourceVersion": "2",
		"annotations": map[string]any{"a": "b"}},
		"spec": map[string]any{"a": "2", "new": map[string]any{}, "l": []any{"x", "y"}}}
	want := []string{`+ metadata.annotations.a = "b"`, `~ spec.a: "1" => "2"`, `- spec.gone`, `~ spec.l: ["x"] => ["x","y"]`, `+ spec.new = {}`}
	if diff := cmp.Diff(want, fieldDiff(before, after)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestKubeRules(t *testing.T) {
	s, _ := build(t, netpol)
	want := []node.KubeRule{{Group: "networking.k8s.io", Resource: "networkpolicies", Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}}}
	if diff := cmp.Diff(want, s.KubeRules()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	s, _ = build(t, `
status     = true
namespaces = ["a", "b"]
object     = { apiVersion = "example.com/v1", kind = "Run", metadata = { name = record.key, namespace = "a" } }
`)
	want = []node.KubeRule{
		{Group: "example.com", Resource: "runs", Namespace: "a", Verbs: []string{"get", "list", "watch"}},
		{Group: "example.com", Resource: "runs/status", Namespace: "a", Verbs: []string{"patch"}},
		{Group: "example.com", Resource: "runs", Namespace: "b", Verbs: []string{"get", "list", "watch"}},
		{Group: "example.com", Resource: "runs/status", Namespace: "b", Verbs: []string{"patch"}},
	}
	if diff := cmp.Diff(want, s.KubeRules()); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

// TestOwnerNamespace: an owner in another namespace than its object (or a
// namespaced owner of a cluster-scoped object) is a diagnostic at the
// owner's namespace when both are constants, and an error naming the
// object when a record decides.
func TestOwnerNamespace(t *testing.T) {
	const owner = "\nowner_reference = { apiVersion = \"example.com/v1\", kind = \"Run\", metadata = { name = \"r1\", uid = \"u-1\", namespace = \"ci\" } }\n"
	tests := []struct {
		name, object, want string
	}{
		{"same namespace", `{ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "x", namespace = "ci" } }`, ""},
		{"other namespace", `{ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "x", namespace = "shop" } }`,
			`:3,117-121: Owner in another namespace; The owner is in namespace "ci" and the object in "shop"`},
		{"cluster-scoped", `{ apiVersion = "v1", kind = "Namespace", metadata = { name = "x" } }`,
			`:3,117-121: Owner in another namespace; The owner is in namespace "ci" and the object sets no namespace`},
		{"computed", `{ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "x", namespace = record.key } }`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := nodetest.Build(t, Spec(), "object = "+tt.object+owner, nil)
			got := ""
			if diags.HasErrors() {
				got = diags.Error()
			}
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("diagnostics %q, want one containing %q", got, tt.want)
			}
		})
	}

	// Known per record only: the object's error names it.
	s, d := build(t, `
object          = { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "cfg", namespace = record.key } }
owner_reference = record.value
`)
	if d != nil {
		t.Fatal(d)
	}
	run := func(ns string) cty.Value {
		md := map[string]cty.Value{"name": cty.StringVal("r1"), "uid": cty.StringVal("u-1")}
		if ns != "" {
			md["namespace"] = cty.StringVal(ns)
		}
		return cty.ObjectVal(map[string]cty.Value{"apiVersion": cty.StringVal("example.com/v1"), "kind": cty.StringVal("Run"), "metadata": cty.ObjectVal(md)})
	}
	for _, c := range []struct{ key, ownerNS, want string }{
		{"ci", "ci", ""},
		{"ci", "", ""}, // a cluster-scoped owner
		{"shop", "ci", `ConfigMap shop/cfg is in namespace "shop": its owner_reference Run r1 is in namespace "ci"`},
	} {
		_, err := s.Prepare(node.Record{Key: c.key, Value: run(c.ownerNS)})
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("object in %s, owner in %q: error %v, want %q", c.key, c.ownerNS, err, c.want)
		}
	}
	s, d = build(t, `
object          = { apiVersion = "v1", kind = "Namespace", metadata = { name = record.key } }
owner_reference = record.value
`)
	if d != nil {
		t.Fatal(d)
	}
	_, err := s.Prepare(node.Record{Key: "team-a", Value: run("ci")})
	if want := `Namespace team-a is cluster-scoped: its owner_reference Run r1 is in namespace "ci"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("cluster-scoped object, namespaced owner: error %v, want %q", err, want)
	}
}

// TestDefaultOwnerValue: the default identity differs between two
// configurations holding a sink of the same name, is the same for one
// configuration built twice, and fits a label value however long the name.
func TestDefaultOwnerValue(t *testing.T) {
	cfg := func(dir string) *schema.Config { return &schema.Config{Dir: dir} }
	a := defaultOwnerValue(node.Build{Address: "sink.kubernetes.default_deny", Name: "default_deny", Config: cfg("/srv/team-a")})
	b := defaultOwnerValue(node.Build{Address: "sink.kubernetes.default_deny", Name: "default_deny", Config: cfg("/srv/team-b")})
	again := defaultOwnerValue(node.Build{Address: "sink.kubernetes.default_deny", Name: "default_deny", Config: cfg("/srv/team-a")})
	if a == b || a != again || !strings.HasPrefix(a, "pipeline.default_deny.") {
		t.Errorf("team-a %q, team-b %q, team-a again %q", a, b, again)
	}
	long := strings.Repeat("n", 100)
	v := defaultOwnerValue(node.Build{Address: "sink.kubernetes." + long, Name: long, Config: cfg("/srv")})
	if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
		t.Errorf("%q: %v", v, errs)
	}
}
