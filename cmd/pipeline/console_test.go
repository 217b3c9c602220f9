package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/cmd/pipeline/console"
	"github.com/pipeline/pipeline/internal/redact"
)

// TestConsoleBounded opens and closes the console's live stream many
// times: goroutines and the heap come back to where they were (no page
// leaves anything behind), at most MaxPages streams follow at once
// without taking the slots of /metrics, and no console endpoint accepts
// anything but GET.
func TestConsoleBounded(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreHTTP...)
	addr, _, _, stop := consolePipeline(t)
	defer stop()
	base := "http://" + addr
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()

	// One stream: it sends a state frame at once and then one per second.
	firstFrame := func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/console/events", nil)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return &statusError{resp.StatusCode}
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if sc.Text() == "event: state" {
				return nil
			}
		}
		return sc.Err()
	}
	if err := firstFrame(context.Background()); err != nil {
		t.Fatalf("first frame: %v", err)
	}
	var out strings.Builder
	if err := runConsole(context.Background(), &out, consoleFlags{against: addr}); err != nil || out.String() != base+"/\n" {
		t.Errorf("pipeline console --against %s: %q, %v", addr, out.String(), err)
	}
	if err := runConsole(context.Background(), &out, consoleFlags{against: "127.0.0.1:1"}); err == nil {
		t.Error("pipeline console against a closed port: no error")
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	goroutines0, heap0 := runtime.NumGoroutine(), heap()
	const cycles = 500
	for i := 0; i < cycles; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		if err := firstFrame(ctx); err != nil {
			cancel()
			t.Fatalf("cycle %d: %v", i, err)
		}
		cancel() // the page goes away
	}
	client.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > goroutines0+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // polling for the server to notice the closed streams
	}
	if g := runtime.NumGoroutine(); g > goroutines0+2 {
		t.Errorf("goroutines: %d before %d connect/disconnect cycles, %d after", goroutines0, cycles, g)
	}
	if h := heap(); h > heap0+4<<20 {
		t.Errorf("heap: %d KiB before %d cycles, %d KiB after", heap0>>10, cycles, h>>10)
	}
	t.Logf("%d cycles: goroutines %d -> %d, heap %d -> %d KiB", cycles, goroutines0, runtime.NumGoroutine(), heap0>>10, heap()>>10)

	// 64 open pages are served; the 65th is refused; /metrics still answers.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	opened := make(chan error, 64)
	for i := 0; i < 64; i++ {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/console/events", nil)
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				opened <- err
				return
			}
			defer resp.Body.Close()
			r := bufio.NewReader(resp.Body)
			_, err = r.ReadString('\n')
			opened <- err
			<-ctx.Done()
		})
	}
	for i := 0; i < 64; i++ {
		if err := <-opened; err != nil {
			t.Errorf("page %d: %v", i, err)
		}
	}
	resp, err := client.Get(base + "/console/events")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("page 65: %s, want 503", resp.Status)
		}
	}
	if body := get(t, client, base+"/metrics"); !strings.Contains(body, "pipeline_node_records") {
		t.Errorf("/metrics with 64 pages open: %.200s", body)
	}
	cancel()
	wg.Wait()

	// Read-only: nothing but GET (and HEAD) is served.
	for _, path := range []string{"/", "/console/graph", "/console/node?addr=source.files.pods", "/console/events", "/console/assets/console.js"} {
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
			req, _ := http.NewRequest(method, base+path, strings.NewReader("{}"))
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: %s, want 405", method, path, resp.Status)
			}
		}
	}
}

type statusError struct{ code int }

func (e *statusError) Error() string { return http.StatusText(e.code) }

// TestConsoleDrawsEveryExample lays out every example as the console
// serves it: every node placed inside the drawing, one edge per input, and
// each node's block as written.
func TestConsoleDrawsEveryExample(t *testing.T) {
	dirs, err := filepath.Glob("../../examples/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("examples: %v %v", dirs, err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			l := load([]string{dir}, nil)
			if l.diags.HasErrors() {
				t.Fatalf("load: %v", l.diags)
			}
			c := console.New(console.Options{Graph: l.graph, Secrets: redact.New(l.cfg.Sensitive)})
			srv := httptest.NewServer(c.Handler())
			defer srv.Close()
			var g struct {
				Width, Height int
				Nodes         []struct {
					Address    string
					X, Y, W, H int
				}
				Edges []struct{ From, To string }
			}
			if err := json.Unmarshal([]byte(get(t, srv.Client(), srv.URL+"/console/graph")), &g); err != nil {
				t.Fatal(err)
			}
			inputs := 0
			for _, n := range l.graph.Nodes {
				inputs += len(n.Inputs)
			}
			if len(g.Nodes) != len(l.graph.Nodes) || len(g.Edges) != inputs {
				t.Errorf("%d nodes and %d edges drawn, want %d and %d", len(g.Nodes), len(g.Edges), len(l.graph.Nodes), inputs)
			}
			for _, n := range g.Nodes {
				if n.X < 0 || n.Y < 0 || n.X+n.W > g.Width || n.Y+n.H > g.Height {
					t.Errorf("%s at %d,%d outside the drawing %dx%d", n.Address, n.X, n.Y, g.Width, g.Height)
				}
				var d struct{ Block, Pos string }
				if err := json.Unmarshal([]byte(get(t, srv.Client(), srv.URL+"/console/node?addr="+n.Address)), &d); err != nil {
					t.Fatal(err)
				}
				kind, _, _ := strings.Cut(n.Address, ".")
				if !strings.HasPrefix(d.Block, kind+` "`) || !strings.Contains(d.Pos, ".hcl:") {
					t.Errorf("%s: block %q at %q", n.Address, d.Block, d.Pos)
				}
			}
		})
	}
}
