package aggregate

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// joinRunner returns a runner of join whose input holds n routes and the
// n services they name (2n records).
func joinRunner(b testing.TB, n int) *runner {
	tr := nodetest.MustBuild(b, Spec(), join, up).Transform.(*Transform)
	env, _ := nodetest.Env(b, prometheus.NewRegistry())
	r := newRunner(tr, env, prometheus.NewCounter(prometheus.CounterOpts{Name: "x"}))
	snap := make([]node.Record, 0, 2*n)
	for i := range n {
		snap = append(snap,
			node.Record{Key: fmt.Sprintf("r/%05d", i), Value: route(fmt.Sprintf("r%05d", i), fmt.Sprintf("s%05d", i))},
			node.Record{Key: fmt.Sprintf("s/%05d", i), Value: service(fmt.Sprintf("s%05d", i), int64(i))})
	}
	r.apply(node.Event{Reset: true, Synced: true, Snapshot: snap})
	return r
}

// BenchmarkJoin times one evaluation from scratch of the join of N routes
// with N services (2N records): what the first evaluation of a run costs.
func BenchmarkJoin(b *testing.B) {
	for _, n := range []int{100, 1000, 3000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			r := joinRunner(b, n)
			cpu := cpuTime(b)
			for b.Loop() {
				r.prog = newProgram(r.t)
				recs, err := r.evaluate()
				if err != nil || len(recs) != n {
					b.Fatalf("%d records, %v", len(recs), err)
				}
			}
			cpu.report()
		})
	}
}

// BenchmarkJoinChange times the evaluation after one change of the input
// of the same join: a route switched to another service, or a service's
// port changed (which every route's record reads, through let.ports).
func BenchmarkJoinChange(b *testing.B) {
	changes := []struct {
		name   string
		change func(i, n int) node.Delta
	}{
		{"route", func(i, n int) node.Delta {
			k := fmt.Sprintf("%05d", i%n)
			return node.Upsert("r/"+k, route("r"+k, fmt.Sprintf("s%05d", (i+1)%n)), time.Time{})
		}},
		{"service", func(i, n int) node.Delta {
			k := fmt.Sprintf("%05d", i%n)
			return node.Upsert("s/"+k, service("s"+k, int64(n+i)), time.Time{})
		}},
	}
	for _, c := range changes {
		for _, n := range []int{100, 1000, 3000} {
			b.Run(fmt.Sprintf("%s/%d", c.name, n), func(b *testing.B) {
				r := joinRunner(b, n)
				if _, err := r.evaluate(); err != nil {
					b.Fatal(err)
				}
				i := 0
				cpu := cpuTime(b)
				for b.Loop() {
					i++
					r.apply(node.Event{Deltas: []node.Delta{c.change(i, n)}})
					recs, err := r.evaluate()
					if err != nil || len(recs) != n {
						b.Fatalf("%d records, %v", len(recs), err)
					}
				}
				cpu.report()
			})
		}
	}
}

// cpuClock reports the CPU time of the process (every thread, the
// collector's included) per op as "cpu-ns/op": on a shared machine, wall
// time per op counts the waits for a core too.
type cpuClock struct {
	b     *testing.B
	start time.Duration
}

func cpuTime(b *testing.B) cpuClock { return cpuClock{b: b, start: processCPU(b)} }

func (c cpuClock) report() {
	c.b.ReportMetric(float64(processCPU(c.b)-c.start)/float64(c.b.N), "cpu-ns/op")
}

func processCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
