package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// manyFiles measures F1 and F2: the peak RSS (VmHWM) of `pipeline run`
// with a files source over many small files (100,000 of about 80 bytes;
// 2,000 in the smoke run) into a log sink, once every record is written
// (F1) and again after one of the files changed and its new record is
// written (F2). A reload that parsed every file again held the old and
// the new records at once: F2 was 2.1x F1 (1.5 GB).
func manyFiles(ctx context.Context, e *Env) ([]Row, error) {
	n := 100_000
	if e.opts.Smoke {
		n = 2_000
	}
	f1 := fmt.Sprintf("files source over %d small files: peak RSS after load", n)
	f2 := "same, peak RSS after one file changed"
	if _, err := os.Stat(e.opts.Pipeline); err != nil {
		why := "no pipeline binary: " + err.Error()
		return []Row{skipped("F1", f1, why), skipped("F2", f2, why)}, nil
	}
	if err := e.scratch(); err != nil {
		return nil, err
	}
	dir := filepath.Join(e.dir, "f1")
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	write := func(i int, label string) error {
		name := fmt.Sprintf("p%06d", i)
		body := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"ns","labels":{"v":"` + label + `"}}}` + "\n"
		return os.WriteFile(filepath.Join(data, name+".json"), []byte(body), 0o644)
	}
	for i := range n {
		if err := write(i, "a"); err != nil {
			return nil, err
		}
	}
	out := filepath.Join(dir, "out.log")
	cfg := filepath.Join(dir, "p.hcl")
	src := manyFilesConfig(filepath.Join(data, "*.json"), out)
	if err := os.WriteFile(cfg, []byte(src), 0o644); err != nil {
		return nil, err
	}
	var load, change []float64
	for range e.opts.Runs {
		os.Remove(out)
		if err := write(0, "a"); err != nil {
			return nil, err
		}
		a, b, err := e.manyFilesRun(ctx, cfg, out, n, func() error { return write(0, "b") })
		if err != nil {
			return nil, err
		}
		load, change = append(load, a), append(change, b)
	}
	r1 := measured("F1", f1, "MB", load)
	r2 := measured("F2", f2, "MB", change).against(r1, "<= 1.1x")
	return []Row{r1, r2}, nil
}

// manyFilesConfig is the F1 graph over the files glob matches, logged as
// JSON to out.
func manyFilesConfig(glob, out string) string {
	return fmt.Sprintf(`source "files" "pods" {
  paths = [%q]
}
transform "extract" "r" {
  input = source.files.pods
  key   = "${object.metadata.namespace}/${object.metadata.name}"
  value = { v = object.metadata.labels.v }
}
sink "log" "l" {
  input  = transform.extract.r
  path   = %q
  format = "json"
}
`, glob, out)
}

// manyFilesRun runs the pipeline until the log holds n lines, reads its
// peak RSS, changes one file, waits for its line and reads it again (with
// change nil it stops after the load).
func (e *Env) manyFilesRun(ctx context.Context, cfg, out string, n int, change func() error) (load, changed float64, err error) {
	addr, err := freeAddr()
	if err != nil {
		return 0, 0, err
	}
	p, err := e.startProc("files", e.opts.Pipeline, "run", "--listen", addr, "--log-level", "warn", cfg)
	if err != nil {
		return 0, 0, err
	}
	defer p.stop()
	wait := func(lines int) error {
		deadline := time.Now().Add(10 * time.Minute)
		for {
			b, _ := os.ReadFile(out)
			if bytes.Count(b, []byte("\n")) >= lines {
				return nil
			}
			if err := p.exited(); err != nil {
				return err
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("files: %d of %d log lines", bytes.Count(b, []byte("\n")), lines)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if err := wait(n); err != nil {
		return 0, 0, err
	}
	pid := p.cmd.Process.Pid
	if load, err = rssMB(pid, "VmHWM"); err != nil || change == nil {
		return load, 0, err
	}
	if err := change(); err != nil {
		return 0, 0, err
	}
	if err := wait(n + 1); err != nil {
		return 0, 0, err
	}
	changed, err = rssMB(pid, "VmHWM")
	return load, changed, err
}
