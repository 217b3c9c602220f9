package audit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine/node"
)

// writeTrail appends n upsert lines in batches of 10 and closes the target.
func writeTrail(t testing.TB, s *Sink, n int) {
	t.Helper()
	tg, _, _ := open(t, s)
	for i := 0; i < n; i += 10 {
		var batch []node.Entry
		for j := i; j < min(i+10, n); j++ {
			batch = append(batch, rec(j))
		}
		tg.Update(context.Background(), batch)
		for _, e := range batch {
			if e.Err != nil {
				t.Fatal(e.Err)
			}
		}
	}
	if err := tg.Close(); err != nil {
		t.Fatal(err)
	}
}

func trailFiles(t testing.TB, dir string) []string {
	t.Helper()
	files, err := TrailFiles([]string{filepath.Join(dir, "trail.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func countOps(t testing.TB, files []string, op string) int {
	n := 0
	for _, f := range files {
		for _, l := range readLines(t, f) {
			if l["op"] == op {
				n++
			}
		}
	}
	return n
}

func TestRotationAndRetentionVerify(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	dir := t.TempDir()
	writeTrail(t, build(t, dir, `max_size = "2KiB"`+"\nmax_files = 3"), 200)
	files := trailFiles(t, dir)
	if len(files) != 4 {
		t.Fatalf("files %v, want 3 rotated and the active one", files)
	}
	if countOps(t, files, opRotate) < 3 || countOps(t, files, opRetention) == 0 {
		t.Fatalf("rotate and retention lines missing")
	}
	rep := mustVerify(t, dir)
	if rep.FirstSeq == 1 || rep.HeadSeq < 200 {
		t.Errorf("verified seq %d to %d; want a trail cut by retention reaching past 200", rep.FirstSeq, rep.HeadSeq)
	}
	// The first line of each rotated-in file links to the previous file's last hash.
	for i := 1; i < len(files); i++ {
		prevLines, first := readLines(t, files[i-1]), readLines(t, files[i])[0]
		if first["op"] != opRotate || first["prev"] != prevLines[len(prevLines)-1]["hash"] {
			t.Errorf("%s does not start with a rotate line linked to %s", files[i], files[i-1])
		}
	}
	// Reopening resumes the chain in the same files.
	writeTrail(t, build(t, dir, `max_size = "2KiB"`+"\nmax_files = 3"), 30)
	if rep2 := mustVerify(t, dir); rep2.HeadSeq <= rep.HeadSeq+30 {
		t.Errorf("after reopening head is %d, want past %d", rep2.HeadSeq, rep.HeadSeq+30)
	}
}

func TestRetentionByAge(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	dir := t.TempDir()
	clock := time.Now()
	s := build(t, dir, `max_size = "2KiB"`+"\nmax_files = 0\nmax_age = \"1h\"")
	s.Now = func() time.Time { return clock }
	writeTrail(t, s, 100)
	before := len(trailFiles(t, dir))
	clock = clock.Add(2 * time.Hour)
	writeTrail(t, s, 30) // rotates at least once, which applies max_age
	files := trailFiles(t, dir)
	if before < 3 || len(files) > 3 {
		t.Fatalf("%d files before, %d after aging: want old files removed", before, len(files))
	}
	for _, f := range files {
		if strings.HasSuffix(f, ".1") {
			t.Errorf("the oldest file %s survived max_age", f)
		}
	}
	mustVerify(t, dir)
}

func TestFsyncModes(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	for _, mode := range []string{"always", "interval", "never"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			s := build(t, dir, `fsync = "`+mode+`"`+"\nfsync_interval = \"20ms\"")
			tg, _, _ := open(t, s)
			tg.Update(context.Background(), []node.Entry{rec(1)})
			ck := filepath.Join(dir, "trail.jsonl.checkpoint")
			switch mode {
			case "always": // the checkpoint is written before Update returns
				if c, err := ReadCheckpoint(ck); err != nil || c.Seq != 2 {
					t.Fatalf("checkpoint after an always write: %+v %v", c, err)
				}
			case "interval": // the ticker writes it
				deadline := time.Now().Add(10 * time.Second)
				for {
					if c, err := ReadCheckpoint(ck); err == nil && c.Seq == 2 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("no checkpoint from the interval flush")
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			if err := tg.Close(); err != nil {
				t.Fatal(err)
			}
			c, err := ReadCheckpoint(ck)
			if err != nil || c.Seq != 2 || c.Count != 2 {
				t.Fatalf("checkpoint after close: %+v %v", c, err)
			}
			if _, err := os.Stat(ck + ".tmp"); !os.IsNotExist(err) {
				t.Errorf("temporary checkpoint left behind: %v", err)
			}
			mustVerify(t, dir)
		})
	}
}

// TestResumeAfterPartialLine: a file ending mid-line (a crash mid-write) is
// rotated away as it is; new lines chain on in a new file, and verify names
// the partial line, nothing else.
func TestResumeAfterPartialLine(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	dir := t.TempDir()
	writeTrail(t, build(t, dir, ""), 5)
	path := filepath.Join(dir, "trail.jsonl")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":7,"op":"ups`)
	f.Close()
	writeTrail(t, build(t, dir, ""), 3)
	files := trailFiles(t, dir)
	if len(files) != 2 {
		t.Fatalf("files %v, want the partial file rotated away", files)
	}
	p := verifyDir(t, dir)
	if p == nil || filepath.Base(p.File) != "trail.jsonl.1" || p.Line != 7 || p.Kind != Truncated {
		t.Fatalf("verify: %v, want trail.jsonl.1:7 truncated", p)
	}
}
