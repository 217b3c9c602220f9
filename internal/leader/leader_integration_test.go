//go:build integration

package leader

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/client-go/kubernetes"

	"github.com/pipeline/pipeline/internal/kubeapitest"
)

var srv *kubeapitest.Server

func TestMain(m *testing.M) { os.Exit(kubeapitest.Main(m, &srv)) }

// candidate records what Run reports to one instance.
type candidate struct {
	mu      sync.Mutex
	until   time.Time // last OnLead
	first   time.Time // when OnLead was first called
	lost    time.Time // last OnLose
	running chan struct{}
}

func (c *candidate) lead(until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first.IsZero() {
		c.first = time.Now()
	}
	c.until = until
}

func (c *candidate) lose() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lost = time.Now()
	c.until = time.Time{}
}

func (c *candidate) leading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Before(c.until)
}

// TestHandover: of two candidates exactly one leads; when it shuts down it
// reports the loss before it releases the lease, so the other starts
// leading only after the first stopped, and quickly (no lease_duration wait).
func TestHandover(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
	ns := kubeapitest.NewNamespace(t, kubeClient(t))
	const lease, renew, retry = 3 * time.Second, 2 * time.Second, 500 * time.Millisecond
	start := func(id string) (*candidate, context.CancelFunc) {
		c := &candidate{running: make(chan struct{})}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			defer close(c.running)
			err := Run(ctx, Config{REST: srv.RESTConfig(), Namespace: ns, Name: "handover", Identity: id,
				LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry,
				OnLead: c.lead, OnLose: c.lose, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Errorf("Run %s: %v", id, err)
			}
		}()
		return c, cancel
	}
	a, stopA := start("a")
	b, stopB := start("b")
	defer func() { stopA(); stopB(); <-a.running; <-b.running }()

	var leader, follower *candidate
	var stopLeader context.CancelFunc
	waitFor(t, 10*time.Second, func() bool {
		switch {
		case a.leading() && !b.leading():
			leader, follower, stopLeader = a, b, stopA
		case b.leading() && !a.leading():
			leader, follower, stopLeader = b, a, stopB
		default:
			return false
		}
		return true
	})
	// Renewals keep the lead alive beyond one renew_deadline.
	time.Sleep(renew + retry)
	if !leader.leading() || follower.leading() {
		t.Fatal("leadership did not hold steady across renewals")
	}

	stopLeader()
	<-leader.running
	stopped := time.Now()
	waitFor(t, lease, follower.leading)
	leader.mu.Lock()
	lost := leader.lost
	leader.mu.Unlock()
	follower.mu.Lock()
	first := follower.first
	follower.mu.Unlock()
	if lost.IsZero() || !lost.Before(first) {
		t.Fatalf("the old leader stopped at %v, the new one started at %v: the old must stop first", lost, first)
	}
	t.Logf("handover %v after the leader stopped", first.Sub(stopped).Round(time.Millisecond))
}

func waitFor(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func kubeClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
