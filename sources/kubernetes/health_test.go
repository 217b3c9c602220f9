package kubernetes

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/kobject"
)

func TestMonitor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		env, health := nodetest.Env(t, reg)
		m, err := newMetrics(reg)
		if err != nil {
			t.Fatal(err)
		}
		mon := &monitor{health: env.Health, log: env.Logger, m: m, disconnectAfter: 30 * time.Second}
		status := func() float64 { return testutil.ToFloat64(m.status) }
		step := func(what string, wantState node.State, wantStatus float64) {
			t.Helper()
			if got := health.State(); got != wantState || status() != wantStatus {
				t.Fatalf("%s: state %s status %v, want %s %v", what, got, status(), wantState, wantStatus)
			}
		}
		mon.tick(time.Now())
		step("start", node.Pending, statusDisconnected)
		mon.ok()
		step("listed", node.Pending, statusConnected)
		mon.setSynced()
		step("synced", node.Healthy, statusConnected)
		refused := errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
		mon.fail(refused)
		step("watch error", node.Degraded, statusDegraded)
		time.Sleep(29 * time.Second)
		mon.fail(refused)
		mon.tick(time.Now())
		step("29s of errors", node.Degraded, statusDegraded)
		time.Sleep(time.Second)
		mon.tick(time.Now())
		step("30s of errors", node.Down, statusDisconnected)
		if !strings.Contains(health.Detail, "connection refused") {
			t.Errorf("detail %q lacks the error", health.Detail)
		}
		mon.ok()
		step("reconnected", node.Healthy, statusConnected)
		mon.checked(errors.New("GET /readyz: 500"))
		step("check failed", node.Down, statusDisconnected)
		mon.checked(nil)
		step("check recovered", node.Healthy, statusConnected)
		if got := testutil.ToFloat64(m.reconnects); got != 1 {
			t.Errorf("reconnects = %v, want 1", got)
		}
		want := []node.State{node.Pending, node.Healthy, node.Degraded, node.Down, node.Healthy, node.Down, node.Healthy}
		if diff := cmp.Diff(want, health.States()); diff != "" {
			t.Errorf("health (-want +got)\n%s", diff)
		}
	})
}

func TestObjectCacheTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fetches := map[string]int{}
		fetch := func(_ context.Context, ns, name string) (*unstructured.Unstructured, error) {
			fetches[ns+"/"+name]++
			u := newPod(name, "1", nil)
			return u, nil
		}
		prune, _ := kobject.NewPruner([]string{"{.metadata.managedFields}"})
		c := newObjectCache(time.Minute, prune, fetch)
		ctx := context.Background()
		get := func() *unstructured.Unstructured {
			t.Helper()
			u, err := c.get(ctx, "shop/a")
			if err != nil {
				t.Fatal(err)
			}
			return u
		}
		if u := get(); u.GetManagedFields() != nil {
			t.Error("ignore_fields not applied to fetched objects")
		}
		time.Sleep(50 * time.Second)
		get() // renews the TTL
		time.Sleep(50 * time.Second)
		get()
		if fetches["shop/a"] != 1 {
			t.Fatalf("%d fetches; accesses within the TTL must renew it", fetches["shop/a"])
		}
		time.Sleep(61 * time.Second)
		c.sweep(time.Now())
		if c.mu.Lock(); len(c.items) != 0 {
			t.Fatal("expired entry not swept")
		}
		c.mu.Unlock()
		get()
		c.invalidate("shop/a")
		get()
		if fetches["shop/a"] != 3 {
			t.Fatalf("%d fetches, want 3 (expiry and invalidation refetch)", fetches["shop/a"])
		}
		u := get()
		u.SetName("mutated")
		if get().GetName() != "a" {
			t.Error("get returned the cached object itself, not a copy")
		}
	})
}
