package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/metrics"
	"slices"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/hashicorp/hcl/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine"
	enginegraph "github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
	"github.com/pipeline/pipeline/sinks/ebpfmap"
	"github.com/pipeline/pipeline/transforms/debounce"
	"github.com/pipeline/pipeline/transforms/extract"
	"github.com/pipeline/pipeline/transforms/graceperiod"
)

// churnResult is what a churn child prints.
type churnResult struct {
	Updates   int       `json:"updates"`
	Rates     []float64 `json:"rates"`    // updates/s accepted by the source's output, per window of the run
	RSSMB     []float64 `json:"rss"`      // the process's VmRSS at the end of each window
	LiveMB    []float64 `json:"live"`     // the heap live after the last collection, at the end of each window
	LagMS     float64   `json:"lag_ms"`   // from the last update to the map equal to the desired state
	Lost      int       `json:"lost"`     // desired keys missing from the map plus stale keys left in it
	PeakRSSMB float64   `json:"peak_rss"` // the process's VmHWM
}

// churnWindows is how many windows a churn run is cut into: its rate is
// stated per window, and its memory at each window's end.
const churnWindows = 5

// churn measures P3 in a child process (so its memory is its own): one
// run, cut into churnWindows windows whose accepted rates are the row's
// samples.
func churn(ctx context.Context, e *Env) ([]Row, error) {
	const id = "P3"
	name := fmt.Sprintf("sustained churn, %d updates/s offered for %s over %d pods", e.opts.ChurnRate, e.opts.ChurnDuration, e.opts.ChurnPods)
	if why := needRoot(); why != "" {
		return []Row{skipped(id, name, why)}, nil
	}
	dir := filepath.Join("/sys/fs/bpf", fmt.Sprintf("pipeline-bench-%d", os.Getpid()))
	defer os.RemoveAll(dir)
	p, err := e.startProc("churn", e.opts.Self, "churn", "-pin", filepath.Join(dir, "churn"),
		"-rate", fmt.Sprint(e.opts.ChurnRate), "-duration", e.opts.ChurnDuration.String(), "-pods", fmt.Sprint(e.opts.ChurnPods))
	if err != nil {
		return nil, err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		p.stop()
		return nil, ctx.Err()
	}
	out, _ := os.ReadFile(p.log)
	var r churnResult
	if !p.cmd.ProcessState.Success() || json.Unmarshal(lastLine(out), &r) != nil || len(r.RSSMB) == 0 {
		return nil, fmt.Errorf("churn: %s: %s", p.cmd.ProcessState, firstLine(string(out)))
	}
	e.logf("churn: %s updates/s per window, drained %.1f ms after the last, %d lost, RSS %s MB and live heap %s MB per window, peak RSS %.0f MB",
		nums(r.Rates), r.LagMS, r.Lost, nums(r.RSSMB), nums(r.LiveMB), r.PeakRSSMB)
	goal := measured("goal", "", "", []float64{float64(e.opts.ChurnRate)})
	goal.ID = fmt.Sprintf("%d/s", e.opts.ChurnRate)
	row := measured(id, name, "updates/s", r.Rates).against(goal, "all offered accepted, 0 lost, live heap flat")
	row.Note = fmt.Sprintf("in-process engine, feed source -> extract -> debounce 100ms -> ebpf_map; one run, rate per %s window; lost %d; drain %s ms; live heap %s MB after the first window, %s MB after the last (RSS %s, %s MB; peak %s MB)",
		e.opts.ChurnDuration/churnWindows, r.Lost, num(r.LagMS), num(r.LiveMB[0]), num(r.LiveMB[len(r.LiveMB)-1]),
		num(r.RSSMB[0]), num(r.RSSMB[len(r.RSSMB)-1]), num(r.PeakRSSMB))
	return []Row{row}, nil
}

// nums formats values for a log line.
func nums(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = num(v)
	}
	return strings.Join(s, " ")
}

func lastLine(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

// churnFeed is a source the churn child (and BenchmarkChain) drives.
type churnFeed struct{ ops chan func(node.Output) }

func (f *churnFeed) Run(ctx context.Context, _ node.Env, out node.Output) error {
	out.MarkSynced()
	for {
		select {
		case <-ctx.Done():
			return nil
		case op := <-f.ops:
			op(out)
		}
	}
}

const churnGraph = `
source "feed" "pods" {}
transform "extract" "ips" {
  input = source.feed.pods
  where = try(object.status.podIP, "") != ""
  key   = object.status.podIP
}
transform "debounce" "batch" {
  input    = transform.extract.ips
  interval = "100ms"
}
sink "ebpf_map" "allowed" {
  input       = transform.debounce.batch
  pin         = %q
  max_entries = %d
  key {
    type = "ipv4"
  }
  value {
    type = "u32"
    from = 1
  }
}
`

// churnIP is pod i's address in generation g (4 generations in turn).
func churnIP(i, g int) [4]byte { return [4]byte{10, byte(g % 4), byte(i >> 8), byte(i)} }

// podPacked is a pod's record value as the kubernetes source keeps it
// for a chain reading its name, namespace and IP: those fields, packed
// (node.PackedVal), compared field by field.
type podPacked struct{ name, namespace, ip string }

// Value implements node.Packed.
func (p *podPacked) Value() cty.Value {
	return cty.ObjectVal(map[string]cty.Value{
		"metadata": cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(p.name), "namespace": cty.StringVal(p.namespace)}),
		"status":   cty.ObjectVal(map[string]cty.Value{"podIP": cty.StringVal(p.ip)}),
	})
}

// Same implements node.Packed.
func (p *podPacked) Same(o node.Packed) bool { q, ok := o.(*podPacked); return ok && *p == *q }

// Field answers the paths of its leaves without building the value, as
// the kubernetes source's packed objects do (extract reads them so).
func (p *podPacked) Field(path []string) (cty.Value, bool) {
	switch {
	case slices.Equal(path, []string{"status", "podIP"}):
		return cty.StringVal(p.ip), true
	case slices.Equal(path, []string{"metadata", "name"}):
		return cty.StringVal(p.name), true
	case slices.Equal(path, []string{"metadata", "namespace"}):
		return cty.StringVal(p.namespace), true
	}
	return cty.NilVal, false
}

// podRecord is the one place the churn encodes an object as a record:
// packed, as the kubernetes source hands a pod on.
func podRecord(i int, ip [4]byte) node.Delta {
	name := fmt.Sprintf("pod-%05d", i)
	return node.Upsert("bench/"+name, node.PackedVal(&podPacked{name: name, namespace: "bench", ip: ipString(ip)}), time.Time{})
}

func churnChild(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("churn", flag.ContinueOnError)
	pin := fs.String("pin", "", "")
	rate := fs.Int("rate", 5000, "")
	duration := fs.Duration("duration", 30*time.Second, "")
	pods := fs.Int("pods", 5000, "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	_ = os.Remove(*pin)
	f := &churnFeed{ops: make(chan func(node.Output), 1)}
	rt, err := churnRuntime(f, *pin, 8**pods)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	defer func() { cancel(); <-done }()

	// Every update is built before the clock starts (4 generations).
	gens := make([][]node.Delta, 4)
	for g := range gens {
		gens[g] = make([]node.Delta, *pods)
		for i := range *pods {
			gens[g][i] = podRecord(i, churnIP(i, g))
		}
	}
	total := int(float64(*rate) * duration.Seconds())
	res := churnResult{Updates: total}
	start := time.Now()
	sent, windowStart, windowSent := 0, start, 0
	endWindow := func(now time.Time) error { // the rate accepted since the last, and the memory now
		rss, err := rssMB(os.Getpid(), "VmRSS")
		res.Rates = append(res.Rates, float64(sent-windowSent)/now.Sub(windowStart).Seconds())
		res.RSSMB = append(res.RSSMB, rss)
		res.LiveMB = append(res.LiveMB, liveHeapMB())
		windowStart, windowSent = now, sent
		return err
	}
	for sent < total {
		if now := time.Now(); len(res.Rates) < churnWindows-1 && now.Sub(start) >= time.Duration(len(res.Rates)+1)*(*duration)/churnWindows {
			if err := endWindow(now); err != nil {
				return err
			}
		}
		due := min(total, int(float64(*rate)*time.Since(start).Seconds()))
		if due > sent {
			batch := make([]node.Delta, 0, due-sent)
			for u := sent; u < due; u++ {
				batch = append(batch, gens[(u / *pods)%4][u%*pods])
			}
			select {
			case f.ops <- func(o node.Output) { o.Apply(batch) }:
			case err := <-done:
				return fmt.Errorf("engine stopped: %v", err)
			}
			sent = due
		}
		time.Sleep(time.Millisecond)
	}
	last := time.Now()
	if err := endWindow(last); err != nil {
		return err
	}
	want := map[[4]byte]bool{}
	for i := range min(*pods, total) {
		u := total - 1 - ((total - 1 - i) % *pods) // the last update of pod i
		want[churnIP(i, u / *pods)] = true
	}
	lost, err := waitDesired(ctx, *pin, want, 60*time.Second)
	if err != nil {
		return err
	}
	res.LagMS, res.Lost = float64(time.Since(last).Microseconds())/1000, lost
	if res.PeakRSSMB, err = rssMB(os.Getpid(), "VmHWM"); err != nil {
		return err
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	return nil
}

// liveHeapMB is the heap the last garbage collection found live.
func liveHeapMB() float64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return float64(s[0].Value.Uint64()) / (1 << 20)
}

func churnRuntime(f *churnFeed, pin string, maxEntries int) (*engine.Runtime, error) {
	return feedRuntime(f, fmt.Sprintf(churnGraph, pin, maxEntries), ebpfmap.Spec())
}

// feedRuntime compiles graph, whose source "feed" is f, with the flagship
// chain's transforms and the sinks given, into a runtime that logs nothing.
func feedRuntime(f *churnFeed, graph string, sinks ...node.Spec) (*engine.Runtime, error) {
	reg := node.NewRegistry(append([]node.Spec{extract.Spec(), debounce.Spec(), graceperiod.Spec(),
		{Kind: node.KindSource, Type: "feed", Summary: "bench", Output: node.Objects,
			NewSource: func(node.Build) (node.Source, hcl.Diagnostics) { return f, nil }}}, sinks...)...)
	cfg, diags := schema.NewLoader().ParseSource("bench.hcl", []byte(graph), schema.Options{Environ: []string{}})
	if diags.HasErrors() {
		return nil, diags
	}
	g, diags := enginegraph.Compile(cfg, reg)
	if diags.HasErrors() {
		return nil, diags
	}
	return engine.NewRuntime(g, engine.RunOptions{Logger: slog.New(slog.DiscardHandler),
		Metrics: engine.NewMetrics(prometheus.NewRegistry(), "bench")})
}

// waitDesired polls the map until its keys are exactly want, or until
// limit; it returns the keys that differ then.
func waitDesired(ctx context.Context, pin string, want map[[4]byte]bool, limit time.Duration) (int, error) {
	deadline := time.Now().Add(limit)
	var m *ebpf.Map
	defer func() {
		if m != nil {
			m.Close()
		}
	}()
	diff := len(want)
	for {
		if m == nil {
			m, _ = ebpf.LoadPinnedMap(pin, &ebpf.LoadPinOptions{ReadOnly: true})
		}
		if m != nil {
			var err error
			if diff, err = mapDiff(m, want); err != nil {
				return 0, err
			}
			if diff == 0 {
				return 0, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return diff, nil
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// mapDiff counts keys missing from the map plus keys in it not wanted.
func mapDiff(m *ebpf.Map, want map[[4]byte]bool) (int, error) {
	const chunk = 8192
	keys, vals := make([][4]byte, chunk), make([]uint32, chunk)
	var cur ebpf.MapBatchCursor
	have := 0
	diff := 0
	for {
		n, err := m.BatchLookup(&cur, keys, vals, nil)
		for _, k := range keys[:n] {
			if want[k] {
				have++
			} else {
				diff++
			}
		}
		if err != nil {
			if errorsIsKeyNotExist(err) {
				return diff + len(want) - have, nil
			}
			return 0, fmt.Errorf("read map: %w", err)
		}
	}
}
