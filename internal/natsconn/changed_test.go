package natsconn

import (
	"testing"
	"time"

	"github.com/pipeline/pipeline/internal/natstest"
)

// TestChangedOncePerConnection checks that a first connect signals Changed
// once. nats.go calls the connect handler from its callback goroutine after
// Connect returned, so a second signal used to arrive just after a source
// had drained the first and started its watch: the watch was thrown away
// with "connection changed during the initial values" and one WARN at every
// start.
func TestChangedOncePerConnection(t *testing.T) {
	srv := natstest.Embedded(t)
	c, err := Dial(config(srv.URL()), Options{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case <-c.Changed():
	case <-time.After(10 * time.Second):
		t.Fatal("no Changed signal for the first connection")
	}
	// The connect handler runs microseconds after Connect returns; half a
	// second is ample for a spurious signal to show.
	select {
	case <-c.Changed():
		t.Fatal("Changed fired a second time for the same connection")
	case <-time.After(500 * time.Millisecond):
	}
	if got := c.Status(); got != Connected {
		t.Fatalf("status = %v, want connected", got)
	}
}
