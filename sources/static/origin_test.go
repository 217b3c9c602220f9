package static

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// TestOrigins: each record's origin is the line its key is written on (the
// attribute's line for keys computed by a for expression), and the
// records are known at load time for fan-in conflict checks.
func TestOrigins(t *testing.T) {
	src := nodetest.MustBuild(t, Spec(), `records = {
  "10.0.0.0/8" = { n = 1 }

  ("192.168.0.0/16") = { n = 2 }
}`, nil).Source.(*Source)
	got := map[string]int{}
	for _, r := range src.KnownRecords() {
		if r.Origin == nil || r.Origin.Source != "source.static.test" || filepath.Base(r.Origin.File) != "test.hcl" {
			t.Fatalf("record %s: origin %+v", r.Key, r.Origin)
		}
		got[r.Key] = r.Origin.Line
	}
	if d := cmp.Diff(map[string]int{"10.0.0.0/8": 3, "192.168.0.0/16": 5}, got); d != "" {
		t.Fatalf("origin lines (-want +got):\n%s", d)
	}

	computed := nodetest.MustBuild(t, Spec(), `records = { for c in ["a", "b"] : c => { n = 1 } }`, nil).Source.(*Source)
	for _, r := range computed.Records() {
		if r.Origin == nil || r.Origin.Line != 2 {
			t.Fatalf("computed record %s: origin %+v, want the attribute's line 2", r.Key, r.Origin)
		}
	}
}

var _ node.KnownRecords = (*Source)(nil)
