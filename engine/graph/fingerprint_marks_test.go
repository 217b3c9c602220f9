package graph

import (
	"bytes"
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
	if n.Parts["path"] == digest("set", "value:"+valueText(mustString("/run/HUNTER2"))) {
		t.Error("the path computed from a secret has the plain digest of its value")
	}
}

// TestFingerprintKeysSecretReferences: an expression that reads a
// sensitive variable beside a per-record one (so it has no value at
// compile time) enters the fingerprint through the keyed digest: its
// digest changes with the key.
func TestFingerprintKeysSecretReferences(t *testing.T) {
	defer UseFingerprintKey(FingerprintKey()) // the process's key again afterwards
	src := strings.Replace(diffBase, `key   = record.ip # the key`, `key   = "${record.ip}-${var.secret}"`, 1)
	var parts []string
	for _, k := range []byte{1, 2} {
		if err := UseFingerprintKey(bytes.Repeat([]byte{k}, FingerprintKeySize)); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, diffCompile(t, src).Node("transform.pass.t").Parts["key"])
	}
	if parts[0] == parts[1] {
		t.Error("the digest of an expression reading a secret does not depend on the fingerprint key")
	}
}
