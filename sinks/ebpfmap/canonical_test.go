package ebpfmap

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// encoderFor builds an ebpf_map sink from body (pin and input added) and
// returns its Encoder, which needs no bpffs.
func encoderFor(t *testing.T, body string) func(node.Record) (node.Entry, error) {
	t.Helper()
	s := nodetest.MustBuild(t, Spec(), "input = transform.extract.ips\npin = \""+filepath.Join(t.TempDir(), "m")+"\"\n"+body, records).Sink.(*Sink)
	env, _ := nodetest.Env(t, nil)
	enc, err := s.Encoder(env)
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

// Keys that name one map key are one entry key: host bits of a prefix,
// and an IPv4 address written IPv4-mapped, canonicalise before the sink
// loop sees them (which then decides between them as a conflict).
func TestKeysCanonicalised(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		keys []string
		want string
	}{
		{"ipv4_prefix", []string{"10.0.0.0/8", "10.1.2.3/8"}, "10.0.0.0/8"},
		{"ipv4_prefix", []string{"192.168.1.1", "::ffff:192.168.1.1", "192.168.1.1/32", "::ffff:192.168.1.1/128"}, "192.168.1.1/32"},
		{"ipv4", []string{"192.168.1.1", "::ffff:192.168.1.1", "192.168.1.1/32"}, "192.168.1.1"},
		{"ip_prefix", []string{"fd00::/8", "fd12:3456::1/8"}, "fd00::/8"},
		{"ip", []string{"10.0.0.1", "::ffff:10.0.0.1"}, "10.0.0.1"},
	} {
		typ := "hash"
		if strings.HasSuffix(tc.typ, "_prefix") {
			typ = "lpm_trie"
		}
		enc := encoderFor(t, "type = \""+typ+"\"\nmax_entries = 16\nkey {\n type = \""+tc.typ+"\"\n}\n"+u8Value)
		for _, k := range tc.keys {
			e, err := enc(rec(k, cty.EmptyObjectVal))
			if err != nil {
				t.Errorf("%s %s: %v", tc.typ, k, err)
				continue
			}
			if e.Key != tc.want {
				t.Errorf("%s %s: entry key %s, want %s", tc.typ, k, e.Key, tc.want)
			}
		}
	}
}

// A fraction into an integer column is refused, whatever its value, and
// so is a constant fraction at validate time.
func TestFractionsRefused(t *testing.T) {
	enc := encoderFor(t, "max_entries = 16\nkey {\n type = \"ipv4\"\n}\nvalue {\n type = \"u8\"\n from = tonumber(record.value.n)\n}")
	for _, n := range []string{"1.5", "3.5", "2.7", "0.5", "-1", "256", "1e300"} {
		e, err := enc(rec("10.0.0.1", cty.ObjectVal(map[string]cty.Value{"n": cty.StringVal(n)})))
		if err == nil {
			t.Errorf("u8 from %s: Prepare wrote %x", n, e.Data)
		}
	}
	for _, n := range []string{"0", "1", "255", "3.0"} {
		if _, err := enc(rec("10.0.0.1", cty.ObjectVal(map[string]cty.Value{"n": cty.StringVal(n)}))); err != nil {
			t.Errorf("u8 from %s: %v", n, err)
		}
	}
	for _, c := range []string{"2.7", "1.5", "0.5", "1/0"} {
		body := "input = transform.extract.ips\npin = \"/sys/fs/bpf/x\"\nmax_entries = 16\nkey {\n type = \"ipv4\"\n}\nvalue {\n type = \"u8\"\n from = " + c + "\n}"
		_, diags := nodetest.Build(t, Spec(), body, records)
		if !diags.HasErrors() || !mentions(diags, "does not fit", "Invalid number") {
			t.Errorf("constant %s: %v", c, diags)
		}
	}
}

func mentions(diags hcl.Diagnostics, any ...string) bool {
	for _, d := range diags {
		for _, s := range any {
			if strings.Contains(d.Summary+d.Detail, s) {
				return true
			}
		}
	}
	return false
}
