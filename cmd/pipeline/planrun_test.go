package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The plan == run property: for random records into every ebpf_map key
// encoding, with colliding key spellings (host bits, ::ffff: mapped
// addresses), values that do not fit, every value encoding and every
// on_conflict rule, the entries run writes are those plan listed (read
// back through a plan that would delete them all), a second plan finds
// nothing to do, and explain calls each planned key applied.
func TestPlanEqualsRun(t *testing.T) {
	if os.Geteuid() != 0 {
		missingInCI(t, "writing pinned maps needs root (bpffs)")
	}
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { planEqualsRun(t, seed) })
	}
}

// propKeys are the key encodings with record keys that spell some map
// keys more than one way.
var propKeys = []struct {
	typ, mapType string
	key          func(r *rand.Rand) string
}{
	{"ipv4", "hash", func(r *rand.Rand) string {
		return []string{"10.0.0.%d", "::ffff:10.0.0.%d", "10.0.0.%d/32"}[r.IntN(3)]
	}},
	{"ipv4_prefix", "lpm_trie", func(r *rand.Rand) string {
		return []string{"10.%d.0.0/16", "10.%d.7.9/16", "::ffff:10.%d.0.0/112", "10.%d.1.1"}[r.IntN(4)]
	}},
	{"ip", "hash", func(r *rand.Rand) string { return []string{"fd00::%d", "10.1.1.%d", "::ffff:10.1.1.%d"}[r.IntN(3)] }},
	{"ip_prefix", "lpm_trie", func(r *rand.Rand) string { return []string{"fd00:%d::/32", "fd00:%d::1/32", "10.%d.0.0/16"}[r.IntN(3)] }},
	{"u32", "hash", func(r *rand.Rand) string { return "%d" }},
	{"string(8)", "hash", func(r *rand.Rand) string { return []string{"k%d", "key-%d"}[r.IntN(2)] }},
}

var propValues = []string{
	"value {\n    type = \"u8\"\n    from = record.value.n\n  }",
	"value {\n    type       = \"u16\"\n    byte_order = \"be\"\n    from       = record.value.n\n  }",
	"value {\n    type = \"u64\"\n    from = record.value.n\n  }",
	"value {\n    type = \"struct\"\n    field \"a\" {\n      type = \"u8\"\n      from = record.value.n\n    }\n    field \"b\" {\n      type = \"u32\"\n      from = 7\n    }\n  }",
}

func planEqualsRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 31))
	bpfDir, err := os.MkdirTemp("/sys/fs/bpf", "planrun-")
	if err != nil {
		missingInCI(t, "no bpffs at /sys/fs/bpf: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(bpfDir) })
	dir := t.TempDir()
	var sinks, recs strings.Builder
	var addrs []string
	for i, k := range propKeys {
		src := fmt.Sprintf("static%d", i)
		fmt.Fprintf(&recs, "source \"static\" %q {\n  records = {\n", src)
		seen := map[string]bool{}
		for range 5 + rng.IntN(20) {
			n := []string{fmt.Sprint(rng.IntN(256)), fmt.Sprint(rng.IntN(4)), "1.5", "300"}[rng.IntN(4)]
			key := fmt.Sprintf(k.key(rng), rng.IntN(6))
			if !seen[key] {
				seen[key] = true
				fmt.Fprintf(&recs, "    %q = { n = %s }\n", key, n)
			}
		}
		recs.WriteString("  }\n}\n")
		rule := []string{"error", "first", "last"}[rng.IntN(3)]
		fmt.Fprintf(&sinks, "sink \"ebpf_map\" \"m%d\" {\n  input       = source.static.%s\n  pin         = %q\n  type        = %q\n  max_entries = 64\n  prune       = true\n  on_conflict = %q\n  key {\n    type = %q\n  }\n  %s\n}\n",
			i, src, filepath.Join(bpfDir, fmt.Sprint("m", i)), k.mapType, rule, k.typ, propValues[rng.IntN(len(propValues))])
		addrs = append(addrs, fmt.Sprintf("sink.ebpf_map.m%d", i))
	}
	cfg := recs.String() + sinks.String()
	path := filepath.Join(dir, "p.hcl")
	writeConfig(t, path, cfg)

	planned := planEntries(t, path, "create", func(c planChange) string { return c.Shown.After })
	if n := len(planned); n != len(propKeys) || len(planned[addrs[0]]) == 0 {
		t.Fatalf("plan lists %d sinks, %d entries in the first", n, len(planned[addrs[0]]))
	}
	r := launch(t, dir, cfg)
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, code := planCLI("plan", "--json", path)
		if code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run did not reach the plan in 30 s; plan now exits %d:\n%s\nlogs:\n%s", code, out, r.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for addr, entries := range planned {
		for key := range entries {
			out, code := planCLI("explain", "--against", r.addr, key)
			if code != 0 || !strings.Contains(out, addr) || !strings.Contains(out, "applied") {
				t.Errorf("explain %s: exit %d, want %s applied:\n%s", key, code, addr, out)
			}
		}
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	// What the maps hold: a plan with no records deletes every entry,
	// showing its value.
	empty := filepath.Join(dir, "empty.hcl")
	for i := range propKeys {
		cfg = strings.Replace(cfg, fmt.Sprintf("source \"static\" \"static%d\" {\n  records = {\n", i), fmt.Sprintf("source \"static\" \"static%d\" {\n  records = {\n  }\n}\nlocals {\n  unused%d = {\n", i, i), 1)
	}
	writeConfig(t, empty, cfg)
	held := planEntries(t, empty, "delete", func(c planChange) string { return c.Shown.Before })
	if d := cmp.Diff(planned, held); d != "" {
		t.Errorf("maps after run (-planned +held):\n%s\nconfig:\n%s", d, recs.String())
	}
}

type planChange struct {
	Action, Key string
	Shown       struct{ Before, After string }
}

// planEntries runs plan --json on path and returns, per sink, the key and
// shown value of every change of the given action.
func planEntries(t *testing.T, path, action string, shown func(planChange) string) map[string]map[string]string {
	t.Helper()
	out, code := planCLI("plan", "--json", path)
	if code == 1 {
		t.Fatalf("plan: exit 1:\n%s", out)
	}
	var doc struct {
		Sinks []struct {
			Address string
			Changes []planChange
		}
	}
	if err := json.Unmarshal([]byte(out[:strings.LastIndexByte(out, '}')+1]), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	res := map[string]map[string]string{}
	for _, s := range doc.Sinks {
		m := map[string]string{}
		for _, c := range s.Changes {
			if c.Action == action {
				m[c.Key] = shown(c)
			}
		}
		res[s.Address] = m
	}
	return res
}
