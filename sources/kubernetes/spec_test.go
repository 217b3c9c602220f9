package kubernetes

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// build decodes a source "kubernetes" "test" block whose body is body,
// with extra top-level blocks (clusters) in prefix.
func build(t testing.TB, prefix, body string) (*Source, hcl.Diagnostics) {
	t.Helper()
	src := prefix + "\nsource \"kubernetes\" \"test\" {\n" + body + "\n}\n"
	cfg, diags := schema.NewLoader().ParseSource(t.TempDir()+"/test.hcl", []byte(src), schema.Options{Environ: []string{}})
	if diags.HasErrors() {
		return nil, diags
	}
	spec := Spec()
	nb := cfg.Nodes[0]
	content, d := schema.Decode(nb.Body, spec.FullBody(), cfg.Ctx, nb.DeclRange)
	if d.HasErrors() {
		return nil, d
	}
	n, d := spec.NewSource(node.Build{Address: nb.Address(), Name: nb.Name, Content: content, Config: cfg})
	s, _ := n.(*Source)
	return s, d
}

func mustBuild(t testing.TB, prefix, body string) *Source {
	t.Helper()
	s, diags := build(t, prefix, body)
	if diags.HasErrors() {
		t.Fatalf("build: %s", diags)
	}
	return s
}

func TestSpecDiagnostics(t *testing.T) {
	const prod = `cluster "prod" { in_cluster = true }`
	tests := []struct {
		name   string
		prefix string
		body   string
		want   []string
		detail string
	}{
		{name: "resource", body: `resource = "pods"`},
		{name: "kind", body: "api_version = \"apps/v1\"\nkind = \"Deployment\""},
		{name: "everything", prefix: prod, body: `
cluster = cluster.prod
resource = "ingresses"
group = "networking.k8s.io"
namespace = "shop"
selector = "app=web"
field_selector = "metadata.name!=x"
index_by = ["{.metadata.name}"]
ignore_fields = ["{.metadata.managedFields}"]
store = "cached"
cache_ttl = "1m"
call_on_change_during_sync = true
initial_sync = "watch_list"
disconnect_after = "10s"
health_check_interval = "0s"`},
		{name: "missing resource", body: `namespace = "x"`, want: []string{"Missing resource"}},
		{name: "resource and kind", body: "resource = \"pods\"\napi_version = \"v1\"\nkind = \"Pod\"",
			want: []string{"Conflicting resource and kind"}},
		{name: "kind without api_version", body: `kind = "Pod"`, want: []string{"Missing api_version"}},
		{name: "kind with group", body: "kind = \"Deployment\"\napi_version = \"apps/v1\"\ngroup = \"apps\"", want: []string{"Conflicting kind and group"}},
		{name: "bad api_version", body: "kind = \"Pod\"\napi_version = \"a/b/c\"", want: []string{"Invalid api_version"}},
		{name: "kind as resource", body: `resource = "Pod"`, want: []string{"Invalid resource"}},
		{name: "namespace twice", body: "resource = \"pods\"\nnamespace = \"a\"\nnamespaced_watch = true", want: []string{"Conflicting namespace settings"}},
		{name: "empty name", body: "resource = \"pods\"\nname = \"\"", want: []string{"Empty name"}},
		{name: "unknown cluster", prefix: prod, body: "resource = \"pods\"\ncluster = cluster.prdo",
			want: []string{"Reference to undeclared cluster"}, detail: "Did you mean cluster.prod?"},
		{name: "no clusters", body: "resource = \"pods\"\ncluster = cluster.prod",
			want: []string{"Reference to undeclared cluster"}, detail: `cluster "prod" { ... }`},
		{name: "quoted cluster", body: "resource = \"pods\"\ncluster = \"prod\"", want: []string{"Invalid reference"}},
		{name: "cluster attribute path", prefix: prod, body: "resource = \"pods\"\ncluster = cluster.prod.x", want: []string{"Invalid cluster reference"}},
		{name: "cached metadata", body: "resource = \"pods\"\nstore = \"cached\"\nmetadata_only = true", want: []string{"Conflicting store and metadata_only"}},
		{name: "bad initial_sync", body: "resource = \"pods\"\ninitial_sync = \"watchlist\"", want: []string{"Invalid value for initial_sync"}, detail: `Did you mean "watch_list"?`},
		{name: "bad store", body: "resource = \"pods\"\nstore = \"memroy\"", want: []string{"Invalid value for store"}, detail: `Did you mean "memory"?`},
		{name: "bad ttl", body: "resource = \"pods\"\ncache_ttl = \"0s\"", want: []string{"Invalid cache_ttl"}},
		{name: "bad disconnect", body: "resource = \"pods\"\ndisconnect_after = \"0s\"", want: []string{"Invalid disconnect_after"}},
		{name: "bad selector", body: "resource = \"pods\"\nselector = \"a in (\"", want: []string{"Invalid label selector"}},
		{name: "bad selector block", body: "resource = \"pods\"\nselector {\n key = \"a\"\n operator = \"exists\"\n values = [\"x\"]\n}",
			want: []string{"Invalid label selector requirement"}},
		{name: "bad field selector", body: "resource = \"pods\"\nfield_selector = \"x\"", want: []string{"Invalid field selector"}},
		{name: "bad index_by", body: "resource = \"pods\"\nindex_by = [\"{..x}\", \"{.a[\"]", want: []string{"Invalid index_by path"}},
		{name: "bad ignore_fields", body: "resource = \"pods\"\nignore_fields = [\"{..managedFields}\"]", want: []string{"Invalid ignore_fields path"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := build(t, tt.prefix, tt.body)
			var got []string
			for _, d := range diags {
				got = append(got, d.Summary)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("(-want +got)\n%s\n%s", diff, diags)
			}
			if tt.detail != "" && !strings.Contains(diags[0].Detail, tt.detail) {
				t.Errorf("detail %q lacks %q", diags[0].Detail, tt.detail)
			}
		})
	}
}

func TestDecodeValues(t *testing.T) {
	s := mustBuild(t, `cluster "prod" {
  endpoint = "https://10.0.0.1:6443"
  token = "s3cret"
  qps = 5
  burst = 7
}`, `
cluster = cluster.prod
resource = "configmaps"
namespace = "kube-system"
name = "haproxy-config"
selector {
  key = "env"
  operator = "in"
  values = ["prod", "staging"]
}
selector {
  key = "legacy"
  operator = "!exists"
}
field_selector = "metadata.namespace=kube-system"
store = "cached"
cache_ttl = "90s"`)
	want := target{resource: "configmaps", namespace: "kube-system", name: "haproxy-config",
		labelSelector: "env in (prod,staging),!legacy", fieldSelector: "metadata.namespace=kube-system"}
	if diff := cmp.Diff(want, s.target, cmp.AllowUnexported(target{})); diff != "" {
		t.Errorf("target (-want +got)\n%s", diff)
	}
	if s.cluster == nil || s.cluster.Name != "prod" {
		t.Fatalf("cluster %+v", s.cluster)
	}
	wantOpts := options{cached: true, cacheTTL: 90 * time.Second, disconnectAfter: 30 * time.Second, healthCheck: 10 * time.Second}
	if diff := cmp.Diff(wantOpts, s.opts, cmp.AllowUnexported(options{})); diff != "" {
		t.Errorf("options (-want +got)\n%s", diff)
	}
}

// TestObjectFields: the fields offered to an editor come from the same
// API types the schema check reads, less ignore_fields, and only the
// metadata with metadata_only.
func TestObjectFields(t *testing.T) {
	var _ node.FieldLister = (*Source)(nil)
	for _, tc := range []struct {
		body string
		path []string
		want []string // all present
		not  []string // none present
	}{
		{`resource = "pods"`, nil, []string{"apiVersion", "kind", "metadata", "spec", "status"}, nil},
		{`resource = "pods"`, []string{"status"}, []string{"phase", "podIP", "podIPs", "hostIP"}, []string{"replicas"}},
		{`resource = "pods"`, []string{"metadata"}, []string{"name", "namespace", "labels", "managedFields"}, nil},
		{"resource = \"pods\"\nignore_fields = [\"{.metadata.managedFields}\"]", []string{"metadata"}, []string{"name"}, []string{"managedFields"}},
		{"resource = \"pods\"\nmetadata_only = true", nil, []string{"metadata"}, []string{"spec", "status"}},
		{`resource = "deployments"`, []string{"spec"}, []string{"replicas", "selector", "template"}, []string{"podIP"}},
		{"api_version = \"apps/v1\"\nkind = \"Deployment\"", []string{"status"}, []string{"availableReplicas"}, nil},
		{`resource = "pods"`, []string{"metadata", "labels"}, nil, []string{"name"}},
		{`resource = "widgets"`, nil, nil, []string{"metadata"}},
	} {
		got := mustBuild(t, "", tc.body).ObjectFields(tc.path)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%s, %v: %q missing from %v", tc.body, tc.path, w, got)
			}
		}
		for _, n := range tc.not {
			if slices.Contains(got, n) {
				t.Errorf("%s, %v: %q offered in %v", tc.body, tc.path, n, got)
			}
		}
		if !slices.IsSorted(got) {
			t.Errorf("%s, %v: not sorted: %v", tc.body, tc.path, got)
		}
	}
}
