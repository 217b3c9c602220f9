package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"sync"
)

// consolePages is how many open web console pages P10 measures against none.
const consolePages = 20

// consoleLatency measures P10: P2's change latency (flagship chain, a pod's
// new podIP to the pinned map) with no web console page open, then with
// consolePages pages following the console's live stream, alternating in
// the same process and the same run so that the machine's noise falls on
// both alike. Each page is a client of GET /console/events reading every
// frame, as a browser tab does.
func consoleLatency(ctx context.Context, e *Env) ([]Row, error) {
	const id = "P10"
	if why := needRoot(); why != "" {
		return []Row{skipped(id, "change latency with console pages open", why)}, nil
	}
	if err := e.kube(ctx); err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	rig, err := e.startLatencyRig(ctx, "pipeline-console", addr, 4*e.opts.Pods+8*e.opts.Changes*e.opts.Runs)
	if err != nil {
		return nil, err
	}
	defer rig.close()

	var none, open []float64
	var frames int
	for run := range e.opts.Runs {
		// IPs 10.150+ are new to the map whatever P2 left in the pods.
		viaMap, _, err := e.latencyRun(ctx, rig, 50+2*run)
		if err != nil {
			return nil, err
		}
		stop, err := openPages(ctx, "http://"+addr+"/console/events", consolePages)
		if err != nil {
			return nil, err
		}
		withPages, _, err := e.latencyRun(ctx, rig, 51+2*run)
		frames += stop()
		if err != nil {
			return nil, err
		}
		a, b := percentiles(viaMap), percentiles(withPages)
		none, open = append(none, a[0]), append(open, b[0])
		e.logf("console pages run %d/%d: p50 %.2f ms with none open, %.2f ms with %d open", run+1, e.opts.Runs, a[0], b[0], consolePages)
	}
	name := fmt.Sprintf("change latency p50, %d changes/run: %s", e.opts.Changes, "%s")
	base := measured("P10a", fmt.Sprintf(name, "no console page open"), "ms", none)
	with := measured("P10b", fmt.Sprintf(name, fmt.Sprintf("%d console pages open", consolePages)), "ms", open).
		against(base, "within noise of P10a")
	with.Note = fmt.Sprintf("the pages read %d frames in all; same process and runs as P10a, alternating", frames)
	return []Row{base, with}, nil
}

// openPages opens n streams of the console's live frames, each read to the
// end by its own goroutine, once every one has its first frame. stop closes
// them and returns how many frames they read.
func openPages(ctx context.Context, url string, n int) (stop func() int, err error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	frames := 0
	first := make(chan error, n)
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				first <- err
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				first <- fmt.Errorf("console page: %s", resp.Status)
				return
			}
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(nil, 1<<20)
			got := false
			for sc.Scan() {
				if sc.Text() == "event: state" {
					mu.Lock()
					frames++
					mu.Unlock()
					if !got {
						got = true
						first <- nil
					}
				}
			}
			if !got {
				first <- fmt.Errorf("console page: no frame (%v)", sc.Err())
			}
		})
	}
	stop = func() int {
		cancel()
		wg.Wait()
		return frames
	}
	for range n {
		if err := <-first; err != nil {
			stop()
			return nil, err
		}
	}
	return stop, nil
}
