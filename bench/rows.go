package bench

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Options size a run of the table.
type Options struct {
	Runs          int           `json:"runs"`           // runs per scenario; the table shows their median, min and max
	Pods          int           `json:"pods"`           // matching pods for P1 and P4
	BigPods       int           `json:"big_pods"`       // pods of P11, in a namespace of their own
	Changes       int           `json:"changes"`        // changes per P2 run
	ChurnRate     int           `json:"churn_rate"`     // offered updates/s in P3
	ChurnDuration time.Duration `json:"churn_duration"` // length of one P3 run
	ChurnPods     int           `json:"churn_pods"`     // objects P3 updates in turn
	Agents        int           `json:"agents"`         // agents of P9b
	AgentsPerProc int           `json:"per_process"`    // P9b agents sharing one process
	ReconcileKeys int           `json:"reconcile_keys"` // keys of the ebpf reconcile rows
	Routes        []int         `json:"routes"`         // Ingresses of each size of the H rows
	Pipeline      string        `json:"pipeline"`       // the pipeline binary under test
	// Baseline is another pipeline binary P1 runs beside Pipeline, in the
	// same runs, for an A/B under the same load (row P1c-base).
	Baseline   string `json:"baseline,omitempty"`
	Self       string `json:"-"`              // this program, re-run for the churn process
	Contenders string `json:"-"`              // directory of the contender programs (make contenders)
	Only       string `json:"only,omitempty"` // regexp over scenario names
	Smoke      bool   `json:"smoke"`
	Profile    string `json:"-"` // directory for CPU and heap profiles of every pipeline process
	// ProfileHeapAfter is when, after its start, a pipeline process writes
	// its heap profile (0: at exit, when it holds little).
	ProfileHeapAfter time.Duration `json:"-"`
}

// A scenario measures one or more rows. It gets the shared environment
// (the API server and its pods are started once, on first use) and
// returns its rows, each with its reference measured in the same call.
type scenario struct {
	name string
	run  func(ctx context.Context, e *Env) ([]Row, error)
}

// scenarios is the table, in order. To add a row, write its function in
// a file of its own (p5_reload.go: func reload(ctx, e) ([]Row, error))
// and list it here.
var scenarios = []scenario{
	{"start-up", startUp},         // P0
	{"initial-sync", initialSync}, // P1a..P1d and P4
	{"initial-sync-big", bigSync}, // P11
	{"change-latency", changeLatency},
	{"churn", churn},
	{"reload", reload},
	{"plan", planRows}, // P6
	{"nats-kv-mirror", natsKVMirror},
	{"validate", validate},
	{"lsp", lspRows}, // P8c, P8d
	{"hub-agents", hubAgents},
	{"hub-many-agents", manyAgents}, // P9b, P9c
	{"audit", audit},
	{"ebpf-reconcile", ebpfReconcile},
	{"template-render", templateRender},    // T1
	{"template-haproxy", templateLive},     // T2
	{"console-pages", consoleLatency},      // P10
	{"kube-sink-apply", kubeSinkApply},     // K1
	{"kube-sink-latency", kubeSinkLatency}, // K2
	{"files-many", manyFiles},              // F1, F2
	{"files-multidoc", multiDocYAML},       // F3, F4
	{"metrics-scrape", metricsScrape},      // M1
	{"haproxy-routes", haproxyRoutes},      // H1..H5
	{"aggregate-join", aggregateJoin},      // G1
}

// Run measures every scenario selected by o.Only and returns the rows. A
// scenario that fails gives a row saying why; the others still run.
func Run(ctx context.Context, o Options, logf func(format string, args ...any)) ([]Row, error) {
	var only *regexp.Regexp
	if o.Only != "" {
		var err error
		if only, err = regexp.Compile(o.Only); err != nil {
			return nil, fmt.Errorf("-only: %w", err)
		}
	}
	e := &Env{opts: o, logf: logf}
	defer e.Close()
	var rows []Row
	for _, s := range scenarios {
		if only != nil && !only.MatchString(s.name) {
			continue
		}
		logf("scenario %s", s.name)
		start := time.Now()
		rs, err := s.run(ctx, e)
		if err != nil {
			if ctx.Err() != nil {
				return rows, ctx.Err()
			}
			logf("scenario %s failed: %v", s.name, err)
			rs = append(rs, skipped(s.name, s.name, "failed: "+firstLine(err.Error())))
		}
		logf("scenario %s took %s", s.name, time.Since(start).Round(time.Millisecond))
		rows = append(rows, rs...)
	}
	return rows, nil
}

// needRoot says why a BPF row cannot run, or "" when it can.
func needRoot() string {
	if os.Geteuid() != 0 {
		return "skipped: needs root (CAP_BPF) and a bpffs at /sys/fs/bpf"
	}
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/bpf", &st); err != nil || st.Type != unix.BPF_FS_MAGIC {
		return "skipped: no bpffs at /sys/fs/bpf (mount -t bpf bpf /sys/fs/bpf)"
	}
	return ""
}

// ThisMachine describes the machine.
func ThisMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				var kb float64
				fmt.Sscan(f[1], &kb)
				m.Memory = fmt.Sprintf("%.1f GiB", kb/(1<<20))
			}
		}
	}
	return m
}
