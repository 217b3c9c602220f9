package inspect

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/engine"
)

// TestTopFits80Columns: a frame with 30-character addresses and large
// numbers fits an 80-column terminal.
func TestTopFits80Columns(t *testing.T) {
	rows := []topRow{
		{node: "source.kubernetes.backend_pods", state: "degraded", records: 123456, in: 9999, out: 12345, queue: 4096,
			resyncs: 12, restarts: 3, latency: -1},
		{node: "transform.grace_period.drainxx", state: "healthy", records: 2_500_000, in: 0.5, out: 0.5, latency: -1},
		{node: "sink.ebpf_map.allowed_networks", state: "pending", records: 99999, in: 812, out: 812, latency: 0.1234,
			errs: 12.3, sink: true},
	}
	s := &topSample{at: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	s.ready.Ready = true
	for _, colour := range []bool{false, true} {
		var out bytes.Buffer
		v := &topView{w: &out, colour: colour, against: "127.0.0.1:9464"}
		if err := v.render(rows, s); err != nil {
			t.Fatal(err)
		}
		plain := strings.NewReplacer("\x1b[H\x1b[2J", "", "\x1b[32m", "", "\x1b[33m", "", "\x1b[31m", "", "\x1b[0m", "").Replace(out.String())
		for _, line := range strings.Split(plain, "\n") {
			if n := utf8.RuneCountInString(line); n > 80 {
				t.Errorf("colour %v: %d columns: %q", colour, n, line)
			}
		}
		if !strings.Contains(plain, "123.5k") || !strings.Contains(plain, "12.3k") || !strings.Contains(plain, "123ms") {
			t.Errorf("numbers not compact:\n%s", plain)
		}
	}
}

// TestTopEscapesWhatTheServerSays: top prints the node names and states an
// admin endpoint answers, which --against may name anywhere: escaped, in
// colour or not, with only the view's own colour codes raw.
func TestTopEscapesWhatTheServerSays(t *testing.T) {
	const hostile = "x\x1b]0;pwned\x07\x1b[2J\u009b2J\x7f\r\u202eevil"
	ours := strings.NewReplacer("\x1b[H\x1b[2J", "", "\x1b[32m", "", "\x1b[33m", "", "\x1b[31m", "", "\x1b[0m", "")
	for _, colour := range []bool{false, true} {
		var out bytes.Buffer
		s := &topSample{at: time.Now(), ready: engine.Readiness{Nodes: []engine.NodeStatus{{Address: "sink.x." + hostile, State: hostile}}}}
		v := topView{w: &out, colour: colour, against: hostile}
		if err := v.render(topRows(nil, s), s); err != nil {
			t.Fatal(err)
		}
		rest := ours.Replace(out.String())
		if i := strings.IndexFunc(rest, func(r rune) bool { return view.Printable(string(r)) != string(r) }); i >= 0 {
			t.Errorf("%s writes %q raw", fmt.Sprintf("top (colour %v)", colour), []rune(rest[i:])[0])
		}
	}
}
