package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// p5Debounce is the --watch-debounce of the measured run; the row reports
// the time beyond it.
const p5Debounce = 100 * time.Millisecond

// reload measures P5: `pipeline run` watching the flagship config with
// every pod in its map; each edit changes only the sink's resync (the
// sources stay). Time from the file's rename into place to /reloads
// showing the new generation applied, minus the debounce; and, over all
// edits, the pod LISTs the API server served and the map writes.
func reload(ctx context.Context, e *Env) ([]Row, error) {
	const id = "P5"
	name := "reload: config edit to new graph live, sources unchanged"
	if why := needRoot(); why != "" {
		return []Row{skipped(id, name, why)}, nil
	}
	if _, err := os.Stat(e.opts.Pipeline); err != nil {
		return []Row{skipped(id, name, "no pipeline binary: "+err.Error())}, nil
	}
	if err := e.kube(ctx); err != nil {
		return nil, err
	}
	edits := 20
	if e.opts.Smoke {
		edits = 3
	}
	pin := filepath.Join("/sys/fs/bpf", fmt.Sprintf("pipeline-bench-%d", os.Getpid()), "reload")
	_ = os.Remove(pin)
	defer os.Remove(filepath.Dir(pin)) // when empty: other rows may share it
	defer os.Remove(pin)
	dir := filepath.Join(e.dir, "p5")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	base, err := os.ReadFile(e.flagship(pin, benchLabel, 2*e.opts.Pods+1024, false))
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "p.hcl")
	write := func(i int) error {
		src := strings.Replace(string(base), "  max_entries", fmt.Sprintf("  resync      = \"%ds\"\n  max_entries", 300+i), 1)
		tmp := cfg + ".tmp"
		if err := os.WriteFile(tmp, []byte(src), 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, cfg)
	}
	if err := write(0); err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	p, err := e.startProc("reload", e.opts.Pipeline, "run", "--listen", addr, "--log-level", "warn",
		"--watch-debounce", p5Debounce.String(), dir)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	if _, err := waitFull(ctx, p, pin, e.opts.Pods, samples(e.opts.Pods, 8), 5*time.Minute); err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	lists0, err := e.podLists(ctx)
	if err != nil {
		return nil, err
	}
	writes0, err := sinkWrites(client, addr)
	if err != nil {
		return nil, err
	}
	var beyond []float64
	for i := 1; i <= edits; i++ {
		start := time.Now()
		if err := write(i); err != nil {
			return nil, err
		}
		if err := waitGeneration(ctx, client, addr, uint64(i+1), 10*time.Second); err != nil {
			return nil, fmt.Errorf("edit %d: %w", i, err)
		}
		beyond = append(beyond, float64(time.Since(start)-p5Debounce)/1e6)
		time.Sleep(50 * time.Millisecond) // let the new sink settle before the next edit
	}
	lists1, err := e.podLists(ctx)
	if err != nil {
		return nil, err
	}
	writes1, err := sinkWrites(client, addr)
	if err != nil {
		return nil, err
	}
	goal := measured("50 ms", "", "", []float64{50})
	row := measured(id, name, "ms", beyond).against(goal, "<= 50 ms beyond the debounce, 0 relists, 0 entries removed and re-added")
	row.Note = fmt.Sprintf("pipeline run, %d pods, %d edits of the sink's resync, debounce %s; relists %.0f; map writes %.0f",
		e.opts.Pods, edits, p5Debounce, lists1-lists0, writes1-writes0)
	e.logf("reload: p50 %.1f ms beyond the debounce, %.0f relists, %.0f map writes", row.Median, lists1-lists0, writes1-writes0)
	return []Row{row}, nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// waitGeneration polls /reloads until the run's generation is at least
// gen, failing when a reload is not applied.
func waitGeneration(ctx context.Context, c *http.Client, addr string, gen uint64, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		var body struct {
			Generation uint64 `json:"generation"`
			Reloads    []struct {
				Result string `json:"result"`
				Error  string `json:"error"`
			} `json:"reloads"`
		}
		resp, err := c.Get("http://" + addr + "/reloads")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
		}
		if err == nil && len(body.Reloads) > 0 && body.Reloads[0].Result != "applied" {
			return fmt.Errorf("reload %s: %s", body.Reloads[0].Result, body.Reloads[0].Error)
		}
		if err == nil && body.Generation >= gen {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("generation %d not reached after %s (last error: %v)", gen, limit, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(time.Millisecond)
	}
}

// sinkWrites sums pipeline_sink_writes_total (upserts and deletes that
// succeeded) from the run's /metrics.
func sinkWrites(c *http.Client, addr string) (float64, error) {
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return sumSeries(resp.Body, "pipeline_sink_writes_total{", `result="ok"`)
}

// podLists returns the pod LIST requests the API server served.
func (e *Env) podLists(ctx context.Context) (float64, error) {
	raw, err := e.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("API server metrics: %w", err)
	}
	return sumSeries(strings.NewReader(string(raw)), "apiserver_request_total{", `resource="pods"`, `verb="LIST"`)
}

// sumSeries adds the values of the exposition lines that start with
// prefix and contain every label of labels.
func sumSeries(r io.Reader, prefix string, labels ...string) (float64, error) {
	var total float64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			total += v
		}
	}
	return total, sc.Err()
}
