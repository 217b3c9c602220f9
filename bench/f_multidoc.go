package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// multiDocYAML measures F3 and F4: the peak RSS (VmHWM) of `pipeline run`
// with a files source of format yaml into a log sink, once every record
// is written, over 100,000 small YAML documents (`id: pNNNNNN`; 2,000 in
// the smoke run), a file each (F3) and all in one file, separated by
// `---` (F4, goal within 2x of F3): one file must not cost more than
// its documents would apart.
func multiDocYAML(ctx context.Context, e *Env) ([]Row, error) {
	n := 100_000
	if e.opts.Smoke {
		n = 2_000
	}
	f3 := fmt.Sprintf("files source over %d YAML documents, a file each: peak RSS after load", n)
	f4 := "same documents in one file"
	if _, err := os.Stat(e.opts.Pipeline); err != nil {
		why := "no pipeline binary: " + err.Error()
		return []Row{skipped("F3", f3, why), skipped("F4", f4, why)}, nil
	}
	if err := e.scratch(); err != nil {
		return nil, err
	}
	dir := filepath.Join(e.dir, "f3")
	defer os.RemoveAll(dir)
	many, one := filepath.Join(dir, "many"), filepath.Join(dir, "one")
	for _, d := range []string{many, one} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	var stream bytes.Buffer
	for i := range n {
		doc := fmt.Sprintf("id: p%06d\n", i)
		stream.WriteString("---\n" + doc)
		if err := os.WriteFile(filepath.Join(many, fmt.Sprintf("p%06d.yaml", i)), []byte(doc), 0o644); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(one, "all.yaml"), stream.Bytes(), 0o644); err != nil {
		return nil, err
	}
	var rss [2][]float64
	for range e.opts.Runs {
		for i, data := range []string{many, one} {
			out := filepath.Join(dir, "out.log")
			os.Remove(out)
			cfg := filepath.Join(dir, "p.hcl")
			if err := os.WriteFile(cfg, []byte(multiDocConfig(filepath.Join(data, "*.yaml"), out)), 0o644); err != nil {
				return nil, err
			}
			peak, _, err := e.manyFilesRun(ctx, cfg, out, n, nil)
			if err != nil {
				return nil, err
			}
			rss[i] = append(rss[i], peak)
		}
	}
	r3 := measured("F3", f3, "MB", rss[0])
	r4 := measured("F4", f4, "MB", rss[1]).against(r3, "<= 2x")
	return []Row{r3, r4}, nil
}

// multiDocConfig is the F3 and F4 graph: the YAML documents glob matches,
// keyed by their id and logged as JSON to out.
func multiDocConfig(glob, out string) string {
	return fmt.Sprintf(`source "files" "docs" {
  paths  = [%q]
  format = "yaml"
  key    = item.id
}
sink "log" "l" {
  input  = source.files.docs
  path   = %q
  format = "json"
}
`, glob, out)
}
