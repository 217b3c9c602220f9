package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const againstOld = `
source "static" "ips" {
  records = { "10.0.0.1" = { pod = "a" }, "10.0.0.2" = { pod = "b" } }
}
source "static" "other" {
  records = { x = 1 }
}
sink "log" "out" {
  input = source.static.ips
  path  = "out.log"
}
sink "log" "other" {
  input = source.static.other
  path  = "other.log"
}
`

// TestPlanAgainst plans a new configuration against a running instance:
// GET /graph serves the running graph (and refuses other methods), the
// plan names the nodes a reload would rebuild, add, remove and keep and
// the sources that would relist, and the instance's files are unchanged.
func TestPlanAgainst(t *testing.T) {
	dir := t.TempDir()
	r := launch(t, dir, againstOld)
	defer func() {
		if err := r.stop(); err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	eventually(t, "the running instance logged its records", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "out.log"))
		return strings.Count(string(b), "\n") == 2
	})
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Post("http://"+r.addr+"/graph", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /graph: %s, want 405", resp.Status)
	}
	before := snapshotDir(t, dir)

	newCfg := strings.NewReplacer(`"10.0.0.2" = { pod = "b" }`, `"10.0.0.3" = { pod = "c" }`,
		"sink \"log\" \"other\"", "sink \"log\" \"renamed\"").Replace(againstOld)
	planDir := t.TempDir()
	cfg := filepath.Join(planDir, "new.hcl")
	writeConfig(t, cfg, newCfg)
	out, code := planCLI("plan", "--json", "--against", "http://"+r.addr, cfg)
	if code != 2 {
		t.Fatalf("plan exited %d, want 2:\n%s", code, out)
	}
	var doc struct {
		Reload struct {
			Nodes []struct {
				Address, Action string
				Changed         []string
			} `json:"nodes"`
			Relist []string `json:"relist"`
		} `json:"reload"`
		Sinks []struct {
			Address string
			Changes []struct{ Key string } `json:"changes"`
		} `json:"sinks"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got []string
	for _, n := range doc.Reload.Nodes {
		got = append(got, n.Address+" "+n.Action+" "+strings.Join(n.Changed, ","))
	}
	want := []string{"sink.log.other removed ", "sink.log.out rebuilt input", "sink.log.renamed added ",
		"source.static.ips rebuilt records", "source.static.other kept "}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("node diff (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"source.static.ips"}, doc.Reload.Relist); diff != "" {
		t.Errorf("relist (-want +got):\n%s", diff)
	}

	// A reload to the running configuration itself changes nothing, and a
	// kept append-only sink emits nothing. The address works without a
	// scheme, as tap's and explain's do.
	text, code := planCLI("plan", "--against", r.addr, filepath.Join(dir, "p.hcl"))
	if code != 0 || !strings.Contains(text, "= 4 nodes unchanged") {
		t.Errorf("plan of the running configuration exited %d, want 0 and 4 nodes unchanged:\n%s", code, text)
	}
	if diff := cmp.Diff(before, snapshotDir(t, dir)); diff != "" {
		t.Errorf("plan changed the running instance's files (-before +after):\n%s", diff)
	}

	if _, code := planCLI("plan", "--against", "http://127.0.0.1:1", cfg); code != 1 {
		t.Errorf("plan against nothing exited %d, want 1", code)
	}
}

func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		out[e.Name()] = string(b)
	}
	return out
}

// TestPlanAgainstMatchesReload: what `plan --against` says a reload would
// do to each node is what the running instance then does when the same
// configuration is saved over its own.
func TestPlanAgainstMatchesReload(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.hcl")
	writeConfig(t, cfg, againstOld)
	w := runWatched(t, cfg)

	newCfg := strings.NewReplacer(`"10.0.0.2" = { pod = "b" }`, `"10.0.0.3" = { pod = "c" }`,
		"sink \"log\" \"other\"", "sink \"log\" \"renamed\"").Replace(againstOld)
	planned := filepath.Join(t.TempDir(), "new.hcl")
	writeConfig(t, planned, newCfg)
	out, code := planCLI("plan", "--json", "--against", "http://"+w.addr, planned)
	if code != 2 {
		t.Fatalf("plan exited %d, want 2:\n%s", code, out)
	}
	var doc struct {
		Reload struct {
			Nodes []struct {
				Address, Action string
				Changed         []string
			} `json:"nodes"`
		} `json:"reload"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var plannedActions []string
	for _, n := range doc.Reload.Nodes {
		plannedActions = append(plannedActions, n.Address+" "+n.Action+" "+strings.Join(n.Changed, ","))
	}

	saveFile(t, cfg, newCfg)
	recs := w.settle(t, 1)
	if recs[0].Result != "applied" {
		t.Fatalf("reload %s: %s", recs[0].Result, recs[0].Error)
	}
	var done []string
	for _, n := range recs[0].Nodes {
		done = append(done, n.Address+" "+string(n.Action)+" "+strings.Join(n.Changed, ","))
	}
	slices.Sort(plannedActions)
	slices.Sort(done)
	if diff := cmp.Diff(plannedActions, done); diff != "" {
		t.Errorf("planned node actions vs the reload's (-plan +reload):\n%s", diff)
	}
}

const againstSecret = `
variable "token" {
  type      = string
  sensitive = true
  default   = "s3cret-token-value"
}
source "static" "sec" {
  records = { k = { t = var.token } }
}
sink "log" "sec" {
  input = source.static.sec
  path  = "sec.log"
}
source "static" "plain" {
  records = { a = 1 }
}
sink "log" "plain" {
  input = source.static.plain
  path  = "plain.log"
}
`

// TestPlanAgainstSecretNodes: a plan in another process compares the nodes
// that hold a secret with the running instance's through the key file the
// instance names in /graph, so it keeps them as the reload then does; a
// plan that cannot read the file shows them as rebuilt and says why.
func TestPlanAgainstSecretNodes(t *testing.T) {
	bin, err := exec.LookPath("pipeline") // the test binary, installed by TestMain
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir()) // where the instance writes its key
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.hcl")
	writeConfig(t, cfg, againstSecret)
	w := runWatched(t, cfg)
	var st struct {
		KeyFile string `json:"fingerprint_key_file"`
	}
	if err := json.Unmarshal([]byte(get(t, w.client, "http://"+w.addr+"/graph")), &st); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(st.KeyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %q: %v (want mode 0600)", st.KeyFile, err)
	}

	newCfg := strings.Replace(againstSecret, "records = { a = 1 }", "records = { a = 2 }", 1)
	planned := filepath.Join(t.TempDir(), "new.hcl")
	writeConfig(t, planned, newCfg)
	plan := func() (map[string]string, bool, string) {
		t.Helper()
		out, err := exec.Command(bin, "plan", "--json", "--against", "http://"+w.addr, planned).Output()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Fatalf("plan: %v (want exit 2)\n%s", err, out)
		}
		var doc struct {
			Reload struct {
				Nodes []struct {
					Address, Action string
				} `json:"nodes"`
				SecretsCompared bool `json:"secrets_compared"`
			} `json:"reload"`
		}
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		actions := map[string]string{}
		for _, n := range doc.Reload.Nodes {
			actions[n.Address] = n.Action
		}
		return actions, doc.Reload.SecretsCompared, string(out)
	}
	actions, compared, out := plan()
	if !compared || actions["source.static.sec"] != "kept" || actions["sink.log.sec"] != "kept" || actions["source.static.plain"] != "rebuilt" {
		t.Fatalf("plan with the instance's key: compared=%v actions %v\n%s", compared, actions, out)
	}
	if strings.Contains(out, "s3cret-token-value") {
		t.Fatalf("the plan shows the secret:\n%s", out)
	}

	// Without the key file the secret nodes cannot be compared.
	key, err := os.ReadFile(st.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(st.KeyFile); err != nil {
		t.Fatal(err)
	}
	actions, compared, out = plan()
	if compared || actions["source.static.sec"] != "rebuilt" {
		t.Fatalf("plan without the key: compared=%v actions %v\n%s", compared, actions, out)
	}
	text, _ := exec.Command(bin, "plan", "--against", "http://"+w.addr, planned).Output()
	if !strings.Contains(string(text), "nodes holding a secret show as rebuilt") {
		t.Errorf("the text plan does not say why secret nodes show as rebuilt:\n%s", text)
	}
	if err := os.WriteFile(st.KeyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}

	// The reload does what the plan with the key said.
	saveFile(t, cfg, newCfg)
	recs := w.settle(t, 1)
	if recs[0].Result != "applied" {
		t.Fatalf("reload %s: %s", recs[0].Result, recs[0].Error)
	}
	for _, n := range recs[0].Nodes {
		if want := map[string]string{"source.static.sec": "kept", "sink.log.sec": "kept", "source.static.plain": "rebuilt"}[n.Address]; want != "" && string(n.Action) != want {
			t.Errorf("reload: %s %s, want %s", n.Address, n.Action, want)
		}
	}
}

// TestPlanAgainstRebuildOnly: a configuration that only rebuilds nodes (a
// changed attribute that leaves every entry as it is) exits 2 and says
// what the reload would rebuild, not "No changes".
func TestPlanAgainstRebuildOnly(t *testing.T) {
	dir := t.TempDir()
	r := launch(t, dir, againstOld)
	defer func() {
		if err := r.stop(); err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	waitReady(t, http.DefaultClient, "http://"+r.addr+"/readyz")
	cfg := filepath.Join(t.TempDir(), "new.hcl")
	writeConfig(t, cfg, strings.Replace(againstOld, `path  = "out.log"`, "path  = \"out.log\"\n  format = \"json\"", 1))
	out, code := planCLI("plan", "--against", "http://"+r.addr, cfg)
	if code != 2 || strings.Contains(out, "No changes. Every target") || !strings.Contains(out, "The reload would rebuild 1 node, add 0 nodes and remove 0 nodes.") {
		t.Fatalf("plan of a rebuild: exit %d, want 2 and the nodes it rebuilds:\n%s", code, out)
	}
}
