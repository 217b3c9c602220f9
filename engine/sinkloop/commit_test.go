package sinkloop

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// docTarget is a document target (node.Document) that counts its
// rounds: Update and Delete only record the entries; Commit writes them
// all as one document, or refuses it while refuse is set, handing back
// every key the document does not hold as wanted.
type docTarget struct {
	mu      sync.Mutex
	pend    map[node.Key]cty.Value // recorded by Update and Delete
	doc     map[node.Key]cty.Value // the document as last written
	refuse  bool
	commits int // Commit calls after the input synced
}

var _ node.Document = (*docTarget)(nil)

// PlanFile implements node.Document; the loop never calls it.
func (d *docTarget) PlanFile(context.Context, []node.Entry) (node.FilePlan, error) {
	return node.FilePlan{}, nil
}

func (d *docTarget) Prepare(r node.Record) (node.Entry, error) {
	return node.Entry{Key: r.Key, Value: r.Value}, nil
}

func (d *docTarget) Actual(context.Context) ([]node.Entry, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []node.Entry
	for k, v := range d.doc {
		out = append(out, node.Entry{Key: k, Value: v})
	}
	return out, nil
}

func (d *docTarget) Update(_ context.Context, batch []node.Entry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range batch {
		d.pend[e.Key] = e.Value
	}
}

func (d *docTarget) Delete(_ context.Context, batch []node.Entry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range batch {
		delete(d.pend, e.Key)
	}
}

func (d *docTarget) Commit(_ context.Context, r node.Round) []node.Entry {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !r.Synced {
		return nil
	}
	d.commits++
	if !d.refuse {
		d.doc = maps.Clone(d.pend)
		return nil
	}
	err := errors.New("check refused the document")
	var out []node.Entry
	for k, v := range d.pend {
		if w, ok := d.doc[k]; !ok || !w.RawEquals(v) {
			out = append(out, node.Entry{Key: k, Value: v, Err: err})
		}
	}
	for k, v := range d.doc {
		if _, ok := d.pend[k]; !ok {
			out = append(out, node.Entry{Key: k, Value: v, Err: err})
		}
	}
	return out
}

func (d *docTarget) Close() error { return nil }

func (d *docTarget) set(refuse bool) (commits int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.refuse = refuse
	return d.commits
}

// TestCommitFailuresAreTheRounds: a document its Committer refuses in the
// round in which the input syncs is that round's failure (the log line
// counts it, explain says wanted and not in the target, health is
// degraded), and the keys are retried until the document is written; a
// refused delete keeps its key in the target and is retried too. Each round ends
// in one Commit, whatever its Updates and Deletes.
func TestCommitFailuresAreTheRounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &docTarget{pend: map[node.Key]cty.Value{}, refuse: true}
		var logs nodetest.LogBuffer
		var mu sync.Mutex
		var health node.State
		l := New(nopConfig(Config{Address: "sink.doc.d", Prune: true, Log: slog.New(slog.NewTextHandler(&logs, nil)),
			Health: func(st node.State, _ string) { mu.Lock(); health = st; mu.Unlock() }}))
		in := &feed{ready: make(chan struct{}, 1)}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = l.Run(ctx, d, in); close(done) }()
		defer func() { cancel(); <-done }()
		state := func() node.State { mu.Lock(); defer mu.Unlock(); return health }

		in.send(node.Event{Reset: true, Snapshot: []node.Record{{Key: "a", Value: str("1")}, {Key: "b", Value: str("2")}}, Synced: true})
		synctest.Wait()
		if !strings.Contains(logs.String(), `msg="full reconcile" upserts=0 deletes=0 failed=2`) {
			t.Fatalf("the sync round's log:\n%s", logs.String())
		}
		if got := d.set(true); got != 1 {
			t.Errorf("%d commits in the sync round, want 1", got)
		}
		e, _, _ := l.Explain(context.Background(), "a")
		if e.Status != "wanted, not in the target" || e.Attempts != 1 || !strings.Contains(e.LastError, "refused") {
			t.Errorf("explain a: %q, attempt %d, %q", e.Status, e.Attempts, e.LastError)
		}
		if state() != node.Degraded {
			t.Errorf("health %v, want degraded", state())
		}

		// The retry writes through once the target takes the document.
		d.set(false)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if e, _, _ := l.Explain(context.Background(), "a"); e.Status != "applied" || e.Attempts != 0 {
			t.Errorf("after the retry, explain a: %q, attempt %d", e.Status, e.Attempts)
		}
		if state() != node.Healthy {
			t.Errorf("health %v after the retry, want healthy", state())
		}

		// One round of an upsert and a delete: one Commit; the refused
		// delete keeps b in the target (the loop tries again), the upsert fails.
		before := d.set(true)
		in.send(node.Event{Deltas: []node.Delta{node.Upsert("c", str("3"), time.Time{}), {Key: "b", Delete: true}}})
		synctest.Wait()
		if got := d.set(true) - before; got != 1 {
			t.Errorf("%d commits for one round of an upsert and a delete, want 1", got)
		}
		if !strings.Contains(logs.String(), `msg="batch applied" upserts=0 deletes=0 failed=2`) {
			t.Errorf("the round's log:\n%s", logs.String())
		}
		if e, _, _ := l.Explain(context.Background(), "b"); e.Wanted || !e.InTarget || e.Attempts != 1 {
			t.Errorf("explain b after a refused delete: %+v", e)
		}
		d.set(false)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if e, found, _ := l.Explain(context.Background(), "b"); found && e.InTarget {
			t.Errorf("after the retry, b is still in the target: %+v", e)
		}
		if e, _, _ := l.Explain(context.Background(), "c"); e.Status != "applied" {
			t.Errorf("after the retry, explain c: %q", e.Status)
		}
	})
}
