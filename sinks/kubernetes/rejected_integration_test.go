//go:build integration

package kubernetes

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pipeline/pipeline/engine/node"
)

// update writes es and returns them with their errors.
func update(t *testing.T, tg *Target, es ...node.Entry) []node.Entry {
	t.Helper()
	tg.Update(context.Background(), es)
	return es
}

// TestTooLargeRejected: a 413 (the body is over the API server's limit)
// is a rejection, counted as one, not a transient failure.
func TestTooLargeRejected(t *testing.T) {
	ns := useServer(t)
	tg := openSink(t, configMapSink(ns), node.ModeRun)
	e := update(t, tg, prepared(t, tg, strRecords("big", strings.Repeat("x", 4<<20)))...)[0]
	if e.Err == nil || !strings.Contains(e.Err.Error(), "rejected by the API server") {
		t.Errorf("4 MiB ConfigMap: %v, want a rejection", e.Err)
	}
	if n := testutil.ToFloat64(tg.rejected); n != 1 {
		t.Errorf("pipeline_sink_kubernetes_rejected_total = %v, want 1", n)
	}
}
