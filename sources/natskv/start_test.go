package natskv

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/natstest"
)

// TestStartLogsNoWarning starts the source on a running server and a
// bucket with values: it syncs from its first watch and warns of nothing.
// (The first connection used to be signalled twice, once more from the
// client library's callback goroutine, so the first watch was dropped with
// "connection changed during the initial values".)
func TestStartLogsNoWarning(t *testing.T) {
	srv := natstest.Embedded(t)
	kv := bucket(t, srv, "pods")
	for i := range 200 {
		put(t, kv, fmt.Sprintf("v1.10.0.%d.%d", i/256, i%256), `{"pod":"a"}`)
	}
	s := nodetest.MustBuild(t, Spec(), fmt.Sprintf("url = [%q]\nbucket = \"pods\"\nkey_prefix = \"v1.\"", srv.URL()), nil).Source.(*Source)
	env, _ := nodetest.Env(t, nil)
	var logs nodetest.LogBuffer
	env.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	out := nodetest.NewOutput()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, env, out) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	waitFor(t, "synced", out.Synced)
	time.Sleep(300 * time.Millisecond) // a late spurious signal would show by now
	if got := logs.String(); strings.Contains(got, "level=WARN") || strings.Count(got, "bucket state loaded") != 1 {
		t.Errorf("want one load and no warning at start, logged:\n%s", got)
	}
}
