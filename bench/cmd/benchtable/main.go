// Command benchtable prints the performance table of pipeline: one row per
// scenario, each with its median, min and max over the runs and its ratio
// to a floor or peer measured in the same run, and writes the rows to a
// JSON file. `make bench` runs the full sizes, `make bench-smoke` tiny ones.
// See package bench for the scenarios.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pipeline/pipeline/bench"
)

func main() {
	if ok, err := bench.Child(os.Args[1:]); ok {
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

func run() error {
	o := bench.Options{}
	flag.IntVar(&o.Runs, "runs", 5, "runs per scenario (the table shows median, min and max)")
	flag.IntVar(&o.Pods, "pods", 10000, "matching pods for the initial sync and memory rows (try 50000)")
	flag.IntVar(&o.BigPods, "big-pods", 100000, "pods of the large initial sync rows (P11), created once in a namespace of their own")
	flag.IntVar(&o.Changes, "changes", 200, "pod changes per change-latency run")
	flag.IntVar(&o.ChurnRate, "churn-rate", 50000, "updates/s offered in the churn row")
	flag.DurationVar(&o.ChurnDuration, "churn-duration", 5*time.Minute, "length of the churn run (one run, whatever -runs says)")
	flag.IntVar(&o.ChurnPods, "churn-pods", 5000, "objects the churn row updates in turn")
	flag.IntVar(&o.Agents, "agents", 1000, "agents of the hub and many agents rows (P9b)")
	flag.IntVar(&o.AgentsPerProc, "agents-per-process", 100, "P9b agents run in one process (bench/cmd/agents)")
	routes := flag.String("routes", "300,1000,3000", "Ingresses and EndpointSlices of each size of the HAProxy rows (H)")
	flag.StringVar(&o.Pipeline, "pipeline", "bin/pipeline", "the pipeline binary under test (make build)")
	flag.StringVar(&o.Baseline, "baseline", "", "another pipeline binary the initial sync rows run beside -pipeline, interleaved (row P1c-base)")
	flag.StringVar(&o.Contenders, "contenders", "bin/contenders", "directory of the floor and hand-written controller programs (make contenders)")
	flag.StringVar(&o.Only, "only", "", "run only the scenarios whose name matches this regexp")
	flag.BoolVar(&o.Smoke, "smoke", false, "tiny sizes and one run: checks every row works, in seconds")
	flag.StringVar(&o.Profile, "profile", "", "write CPU and heap profiles of every pipeline process measured into this directory")
	flag.DurationVar(&o.ProfileHeapAfter, "profile-heap-after", 0, "with -profile: write each heap profile this long after the process started (0: at exit)")
	jsonPath := flag.String("json", "bench/results.json", "write the rows here (empty: do not)")
	markdown := flag.Bool("markdown", false, "print the table as Markdown")
	from := flag.String("from", "", "print the table of a results file written earlier, measuring nothing")
	flag.Parse()
	if *from != "" {
		res, err := bench.ReadJSON(*from)
		if err != nil {
			return err
		}
		printTable(res, *markdown)
		return nil
	}
	for _, f := range strings.Split(*routes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("-routes: %q is not a number of routes", f)
		}
		o.Routes = append(o.Routes, n)
	}
	if o.Smoke {
		o.Runs, o.Pods, o.Changes, o.ChurnRate, o.ChurnDuration, o.ChurnPods = 1, 200, 10, 50000, 2*time.Second, 500
		o.BigPods, o.Agents, o.AgentsPerProc = 300, 20, 10
		o.Routes = []int{20}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	o.Self = self
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	start := time.Now()
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	res := bench.Results{Date: start.UTC().Truncate(time.Second), Machine: bench.ThisMachine(), Options: o}
	logf("machine: %s", res.Machine)
	res.Rows, err = bench.Run(ctx, o, logf)
	if err != nil {
		return err
	}
	printTable(res, *markdown)
	if *jsonPath != "" {
		if err := bench.WriteJSON(*jsonPath, res); err != nil {
			return err
		}
	}
	for _, r := range res.Rows {
		if strings.HasPrefix(r.Skipped, "failed") {
			return fmt.Errorf("row %s failed: %s", r.ID, r.Skipped)
		}
	}
	return nil
}

func printTable(res bench.Results, markdown bool) {
	fmt.Printf("pipeline benchmarks, %s, %s, %d run(s) per row\n\n", res.Date.Format("2006-01-02 15:04 MST"), res.Machine, res.Options.Runs)
	if markdown {
		bench.Markdown(os.Stdout, res.Rows)
	} else {
		bench.Print(os.Stdout, res.Rows)
	}
}
