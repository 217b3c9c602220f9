package kubernetes

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// TestRunFailureLoggedOnce: a run that fails before it watches (here an
// unparsable kubeconfig) returns its error for the engine to log with the
// restart, and logs nothing itself, so each retry is one log line.
func TestRunFailureLoggedOnce(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("garbage: ["), 0o600); err != nil {
		t.Fatal(err)
	}
	s := mustBuild(t, "cluster \"c\" {\n  kubeconfig = \""+kc+"\"\n}", "cluster = cluster.c\nresource = \"pods\"")
	env, _ := nodetest.Env(t, nil)
	var logs bytes.Buffer
	env.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	err := s.Run(context.Background(), env, nodetest.NewOutput())
	if err == nil || !strings.Contains(err.Error(), "kubeconfig") {
		t.Fatalf("Run = %v, want the kubeconfig error", err)
	}
	if logs.Len() != 0 {
		t.Errorf("the failed run logged by itself:\n%s", logs.String())
	}
}
