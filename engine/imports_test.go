package engine

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/pipeline/pipeline"

// TestImportRules enforces the rooms of docs/design.md (internal helpers
// may use schema and each other), over every package's imports and its
// tests' imports alike:
//   - schema imports nothing of ours but leaf helpers (which import nothing
//     of ours); engine/node only schema;
//   - engine never imports a node package or a client library;
//   - engine/graph, the static model, imports only engine/node and schema
//     of ours; the runtime (engine) never imports engine/plan;
//   - a node package imports engine/node, schema and internal helpers, never
//     engine or another node package;
//   - internal helpers never import engine or node packages;
//   - client-go, cilium/ebpf and nats appear only in node folders, cmd,
//     internal helpers and e2e tests;
//   - engine/internal/enginetest, the engine's test fakes, is imported by
//     tests only.
//
// testExempt lists the only test imports that break a rule, and why.
func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", mod+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(p.ImportPath, mod+"/")
		for _, imp := range p.Imports {
			if why := importViolation(rel, imp); why != "" {
				t.Errorf("%s imports %s: %s", p.ImportPath, imp, why)
			}
		}
		for _, imp := range append(p.TestImports, p.XTestImports...) {
			if why := violation(rel, imp); why != "" && testExempt[rel+" "+imp] == "" {
				t.Errorf("tests of %s import %s: %s", p.ImportPath, imp, why)
			}
		}
	}
}

// testExempt names, as "package import", the test imports allowed to
// break a rule, with the reason.
var testExempt = map[string]string{
	"engine/sinkloop " + mod + "/sinks/ebpfmap":     "BenchmarkFullReconcile and BenchmarkFullPass time the sink loop's internals over a real pinned BPF map",
	"engine/sinkloop github.com/cilium/ebpf":        "the same benchmarks' floors write that map directly",
	"sinks/prometheus " + mod + "/engine/reconcile": "its plan tests diff what the target reads from a running instance with the desired series as plan does (reconcile.Diff), to check the lines plan prints",
}

func isNode(rel string) bool {
	for _, room := range []string{"sources/", "transforms/", "sinks/"} {
		if strings.HasPrefix(rel, room) {
			return true
		}
	}
	return false
}

// leafHelpers are the internal helpers that import only the standard
// library, so that schema, the bottom room, may use them.
var leafHelpers = map[string]bool{"internal/regfile": true}

func violation(rel, imp string) string {
	ours := strings.HasPrefix(imp, mod+"/")
	target := strings.TrimPrefix(imp, mod+"/")
	client := strings.HasPrefix(imp, "k8s.io/client-go") || strings.HasPrefix(imp, "github.com/cilium/ebpf") ||
		strings.HasPrefix(imp, "github.com/nats-io/")
	switch {
	case rel == "schema" && ours && !leafHelpers[target]:
		return "schema imports nothing of ours but leaf helpers"
	case leafHelpers[rel] && ours:
		return "a leaf helper imports nothing of ours"
	case rel == "engine/node" && ours && target != "schema":
		return "engine/node adds only schema"
	case strings.HasPrefix(rel, "engine") && !strings.HasPrefix(rel, "engine/node/nodetest") && ours && isNode(target):
		return "the engine never imports a node type"
	case strings.HasPrefix(rel, "engine") && client:
		return "client libraries belong to node folders"
	case rel == "engine/graph" && ours && target != "engine/node" && target != "schema":
		return "the graph is the static model: it imports only engine/node and schema"
	case rel == "engine" && strings.HasPrefix(target, "engine/plan"):
		return "plan runs on the runtime, never the other way"
	case isNode(rel) && ours && strings.HasPrefix(target, "engine") && !strings.HasPrefix(target, "engine/node"):
		return "a node never imports the engine"
	case isNode(rel) && ours && isNode(target) && !strings.HasPrefix(target, rel):
		return "a node never imports another node"
	case strings.HasPrefix(rel, "internal/") && ours && (strings.HasPrefix(target, "engine") || isNode(target)):
		return "internal helpers import neither the engine nor node types"
	case rel == "schema" && client, rel == "engine/node" && client:
		return "client libraries belong to node folders"
	}
	return ""
}

// importViolation is violation for a package's own (non-test) imports.
func importViolation(rel, imp string) string {
	if imp == mod+"/engine/internal/enginetest" {
		return "the engine's test fakes are for tests only"
	}
	return violation(rel, imp)
}

func TestImportRulesCatchViolations(t *testing.T) {
	for _, c := range [][2]string{
		{"schema", mod + "/engine/node"},
		{"engine/node", mod + "/internal/ctyconv"},
		{"engine", mod + "/sinks/ebpfmap"},
		{"engine", "github.com/cilium/ebpf"},
		{"sinks/ebpfmap", mod + "/engine"},
		{"sinks/ebpfmap", mod + "/engine/graph"},
		{"engine/graph", mod + "/engine/sinkloop"},
		{"engine/graph", mod + "/engine"},
		{"engine", mod + "/engine/plan"},
		{"sinks/ebpfmap", mod + "/sources/kubernetes"},
		{"internal/kobject", mod + "/engine/node"},
		{"schema", mod + "/internal/ctyconv"},
		{"internal/regfile", mod + "/schema"},
	} {
		if violation(c[0], c[1]) == "" {
			t.Errorf("%s importing %s passes the rules", c[0], c[1])
		}
	}
	if importViolation("engine", mod+"/engine/internal/enginetest") == "" {
		t.Error("the runtime importing the engine's test fakes passes the rules")
	}
	if why := violation("sinks/ebpfmap", mod+"/engine/node"); why != "" {
		t.Errorf("a node importing engine/node is allowed, got %q", why)
	}
}
