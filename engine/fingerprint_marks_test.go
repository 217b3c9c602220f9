package engine

import (
	"strings"
	"testing"
)

// TestFingerprintKeysDerivedSecrets: a value computed from a sensitive
// variable through a local enters the fingerprint through the keyed digest,
// like the variable itself, so a short secret cannot be found by hashing
// guesses.
func TestFingerprintKeysDerivedSecrets(t *testing.T) {
	src := strings.Replace(diffBase, `p = "${var.dir}/pods"`, `p = "${var.dir}/${upper(var.secret)}"`, 1)
	g := diffCompile(t, src)
	n := g.Node("source.script.a")
	if n == nil {
		t.Fatal("no source.script.a")
	}
	if n.parts["path"] == digest("set", "value:"+valueText(mustString("/run/HUNTER2"))) {
		t.Error("the path computed from a secret has the plain digest of its value")
	}
}
