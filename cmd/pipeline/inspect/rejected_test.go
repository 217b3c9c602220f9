package inspect

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/pipeline/pipeline/cmd/pipeline/admin"
)

// TestExplainShowsRejected: explain's text view says when the target
// rejected a key's write for good.
func TestExplainShowsRejected(t *testing.T) {
	var out bytes.Buffer
	WriteExplain(&out, admin.Explanation{Key: "k7", Entries: []admin.Entry{{Sink: "sink.mem.m", InputKey: "k7", TargetKey: "k7",
		Status: "wanted, not in the target", Wanted: true, Attempts: 1, LastError: "invalid", Rejected: "rejected by the target: not retried"}}}, time.Now())
	if !strings.Contains(out.String(), "  rejected rejected by the target: not retried\n") {
		t.Errorf("explain:\n%s", out.String())
	}
}
