package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// configPath copies the demo's example configuration into the scratch
// directory once and returns the copy, so the live edit changes the copy
// and never the repository.
func (d *demo) configPath(example string) (string, error) {
	dst := filepath.Join(d.dir, "config")
	main := filepath.Join(dst, "main.hcl")
	if _, err := os.Stat(main); err == nil {
		return dst, nil
	}
	src, err := os.ReadFile(filepath.Join(example, "main.hcl"))
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return "", err
	}
	return dst, os.WriteFile(main, src, 0o644)
}

// liveEdit edits the running configuration: the allow-list sink gets a
// resync interval. pipeline run notices the save, keeps the kubernetes
// source and the transforms running, swaps only the sink, and writes
// nothing to its target.
func (d *demo) liveEdit(ctx context.Context) error {
	sink, typ := "sink.log.allowed", "log"
	if d.ebpf {
		sink, typ = "sink.ebpf_map.allowed", "ebpf_map"
	}
	main := filepath.Join(d.dir, "config", "main.hcl")
	say("live edit: adding resync = \"30s\" to %s in the running configuration (%s)", sink, rel(main))
	fmt.Println("    pipeline run watches the directory; it validates the new file, keeps every unchanged node running and swaps the sink")
	src, err := os.ReadFile(main)
	if err != nil {
		return err
	}
	header := fmt.Sprintf("sink %q \"allowed\" {\n", typ)
	if !strings.Contains(string(src), header) {
		return fmt.Errorf("%s: no %s block to edit", main, strings.TrimSpace(header))
	}
	edited := strings.Replace(string(src), header, header+"  resync = \"30s\"\n", 1)
	before, _, err := d.get("/metrics")
	if err != nil {
		return err
	}
	tmp := main + ".tmp" // an editor's save: write a temporary file, rename it over
	if err := os.WriteFile(tmp, []byte(edited), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, main); err != nil {
		return err
	}
	var body struct {
		Generation uint64 `json:"generation"`
		Reloads    []struct {
			Result   string  `json:"result"`
			Duration float64 `json:"duration_ns"`
			Nodes    []struct {
				Address string `json:"address"`
				Action  string `json:"action"`
			} `json:"nodes"`
		} `json:"reloads"`
	}
	err = waitFor(ctx, 15*time.Second, "the edit applied (/reloads)", func() (bool, error) {
		b, _, err := d.get("/reloads")
		if err != nil {
			return false, err
		}
		return json.Unmarshal([]byte(b), &body) == nil && body.Generation == 2, nil
	})
	if err != nil {
		return err
	}
	r := body.Reloads[0]
	fmt.Printf("    $ curl %s/reloads   (generation %d, %s in %s)\n", d.metricsURL, body.Generation, r.Result, time.Duration(r.Duration).Round(time.Millisecond))
	for _, n := range r.Nodes {
		fmt.Printf("    %-8s %s\n", n.Action, n.Address)
	}
	after, _, err := d.get("/metrics")
	if err != nil {
		return err
	}
	if b, a := metricLines(before, "pipeline_sink_writes_total", sink), metricLines(after, "pipeline_sink_writes_total", sink); strings.Join(b, "\n") != strings.Join(a, "\n") {
		return fmt.Errorf("the reload wrote to %s:\n%s\n->\n%s", sink, strings.Join(b, "\n"), strings.Join(a, "\n"))
	}
	fmt.Printf("    the source did not relist, and %s wrote nothing: its target already held what the cluster says\n", sink)
	return nil
}
