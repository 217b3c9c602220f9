package files

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestObjectFields: completion lists the fields of the data the source
// reads: objects after the kind filter and ignore_fields, CSV columns,
// JSON items through nested objects and list elements.
func TestObjectFields(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "k8s", "a.yaml"), `apiVersion: v1
kind: Pod
metadata: {name: a, namespace: ns, managedFields: [{}]}
status: {podIP: 10.0.0.1, podIPs: [{ip: 10.0.0.1}]}
---
apiVersion: v1
kind: Service
metadata: {name: s}
spec: {clusterIP: 10.96.0.1}
`)
	write(t, filepath.Join(dir, "hosts.csv"), "ip,name,zone\n10.0.0.1,db,a\n")
	write(t, filepath.Join(dir, "items.json"), `[{"ip": "10.0.0.1", "tags": {"env": "prod"}}, {"ip": "10.0.0.2", "ports": [{"port": 80}]}]`)
	for _, tc := range []struct {
		name, body string
		path       []string
		want       []string
	}{
		{"objects", `paths = ["k8s/*.yaml"]
kind = "Pod"`, nil, []string{"apiVersion", "kind", "metadata", "status"}},
		{"ignore_fields", `paths = ["k8s/*.yaml"]
kind = "Pod"
ignore_fields = ["metadata.managedFields"]`, []string{"metadata"}, []string{"name", "namespace"}},
		{"list element", `paths = ["k8s/*.yaml"]`, []string{"status", "podIPs[0]"}, []string{"ip"}},
		{"every kind", `paths = ["k8s/*.yaml"]`, nil, []string{"apiVersion", "kind", "metadata", "spec", "status"}},
		{"csv columns", `paths = ["*.csv"]
format = "csv"
key = item.ip`, nil, []string{"ip", "name", "zone"}},
		{"json items", `paths = ["*.json"]
format = "json"
key = item.ip`, nil, []string{"ip", "ports", "tags"}},
		{"json nested", `paths = ["*.json"]
format = "json"
key = item.ip`, []string{"tags"}, []string{"env"}},
		{"no such field", `paths = ["*.json"]
format = "json"
key = item.ip`, []string{"nothing"}, nil},
		{"no file", `paths = ["none/*.json"]
format = "json"
key = item.ip
allow_empty = true`, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustBuild(t, dir, tc.body)
			if diff := cmp.Diff(tc.want, s.ObjectFields(tc.path)); diff != "" {
				t.Errorf("fields under %v (-want +got):\n%s", tc.path, diff)
			}
		})
	}
}
