package audit

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine/node"
)

// The checkpoint is written through a temporary file of its own, never
// through a name another process may have placed: a symlink where the
// temporary file used to be (PATH.checkpoint.tmp) is not followed, and no
// temporary file is left behind.
func TestCheckpointTempNotFollowed(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "trail.jsonl.checkpoint")
	if err := os.Symlink(victim, ck+".tmp"); err != nil {
		t.Fatal(err)
	}
	s := build(t, dir, `fsync = "always"`)
	tg, _, _ := open(t, s)
	tg.Update(context.Background(), []node.Entry{rec(1)})
	if err := tg.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep me\n" {
		t.Fatalf("the file behind the symlink was written: %q %v", b, err)
	}
	if c, err := ReadCheckpoint(ck); err != nil || c.Seq != 2 {
		t.Fatalf("checkpoint %+v %v", c, err)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(names) > 0 {
		t.Errorf("temporary files left: %v", names)
	}
}
