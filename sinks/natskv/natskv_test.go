package natskv

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/natstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var buckets atomic.Int64

// open builds and opens a sink on a fresh bucket of srv.
func open(t *testing.T, srv *natstest.Server, extra string) (*Target, string) {
	t.Helper()
	bucket := fmt.Sprintf("b%d", buckets.Add(1))
	body := fmt.Sprintf("input = transform.extract.ips\nurl = [%q]\nbucket = %q\nkey_prefix = \"v1.\"\nreconnect_wait = \"50ms\"\n%s", srv.URL(), bucket, extra)
	s := nodetest.MustBuild(t, Spec(), body, &node.Upstream{Type: node.Records}).Sink.(*Sink)
	env, _ := nodetest.Env(t, nil)
	tg, err := s.Open(context.Background(), env, node.ModeRun)
	if err != nil {
		t.Fatal(err)
	}
	return tg.(*Target), bucket
}

func records() []node.Record {
	return []node.Record{
		{Key: "10.0.0.1", Value: cty.ObjectVal(map[string]cty.Value{"pod": cty.StringVal("a")})},
		{Key: "fd00::1", Value: cty.ObjectVal(map[string]cty.Value{"pod": cty.StringVal("b"), "n": cty.NumberIntVal(2)})},
		{Key: "shop/backend-1", Value: cty.EmptyObjectVal},
	}
}

func TestTargetSuite(t *testing.T) {
	srv := natstest.Embedded(t)
	nodetest.RunTargetSuite(t, func(t *testing.T) node.Target {
		tg, _ := open(t, srv, "")
		return tg
	}, records())
}

func connect(t *testing.T, srv *natstest.Server, bucket string) jetstream.KeyValue {
	t.Helper()
	nc, err := nats.Connect(srv.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(context.Background(), bucket)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

func TestPrefixBoundsActualAndEscapes(t *testing.T) {
	srv := natstest.Embedded(t)
	tg, bucket := open(t, srv, "")
	defer tg.Close()
	ctx := context.Background()
	kv := connect(t, srv, bucket)
	if _, err := kv.Put(ctx, "other.x", []byte(`"foreign"`)); err != nil {
		t.Fatal(err)
	}
	es := prepare(t, tg, records())
	tg.Update(ctx, es)
	noErr(t, es)
	got := actualKeys(t, tg)
	want := []string{"v1.10.0.0.1", "v1.fd00=3A=3A1", "v1.shop/backend-1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Actual keys (-want +got):\n%s", diff)
	}
	e, err := kv.Get(ctx, "v1.fd00=3A=3A1")
	if err != nil || string(e.Value()) != `{"n":2,"pod":"b"}` {
		t.Fatalf("stored value %v, %v", e, err)
	}
}

func TestPurgesOldDeleteMarkersInsidePrefix(t *testing.T) {
	srv := natstest.Embedded(t)
	tg, bucket := open(t, srv, `purge_deletes = "1ms"`)
	defer tg.Close()
	ctx := context.Background()
	kv := connect(t, srv, bucket)
	if err := kv.Delete(ctx, "other.gone"); err != nil {
		t.Fatal(err)
	}
	es := prepare(t, tg, records())
	tg.Update(ctx, es)
	tg.Delete(ctx, es[:2])
	noErr(t, es)
	time.Sleep(5 * time.Millisecond)
	if _, err := tg.Actual(ctx); err != nil {
		t.Fatal(err)
	}
	hist, err := kv.History(ctx, "v1.10.0.0.1")
	if err == nil && len(hist) > 0 {
		t.Fatalf("delete marker of v1.10.0.0.1 still there: %d revisions", len(hist))
	}
	if _, err := kv.History(ctx, "other.gone"); err != nil {
		t.Fatalf("marker outside the prefix was purged: %v", err)
	}
}

func TestFullBucketFailsPerKey(t *testing.T) {
	srv := natstest.Embedded(t)
	tg, _ := open(t, srv, `max_bytes = "1KiB"`)
	defer tg.Close()
	big := strings.Repeat("x", 300)
	var recs []node.Record
	for i := range 10 {
		recs = append(recs, node.Record{Key: fmt.Sprintf("k%d", i), Value: cty.StringVal(big)})
	}
	es := prepare(t, tg, recs)
	tg.Update(context.Background(), es)
	failed := 0
	for _, e := range es {
		if e.Err != nil {
			failed++
			if !strings.Contains(e.Err.Error(), "full") {
				t.Errorf("error %q does not say the bucket is full", e.Err)
			}
		}
	}
	if failed == 0 || failed == len(es) {
		t.Fatalf("%d of %d writes failed; want some", failed, len(es))
	}
}

func prepare(t *testing.T, tg node.Target, recs []node.Record) []node.Entry {
	t.Helper()
	out := make([]node.Entry, len(recs))
	for i, r := range recs {
		e, err := tg.Prepare(r)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = e
	}
	return out
}

func noErr(t *testing.T, es []node.Entry) {
	t.Helper()
	for _, e := range es {
		if e.Err != nil {
			t.Fatalf("%s: %v", e.Key, e.Err)
		}
	}
}

func actualKeys(t *testing.T, tg node.Target) []string {
	t.Helper()
	es, err := tg.Actual(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Key)
	}
	sort.Strings(out)
	return out
}

// restartConverges writes batches while the server restarts (same store),
// retrying failed entries as the engine does: the bucket ends holding every
// key with its value.
func restartConverges(t *testing.T, srv *natstest.Server) {
	tg, _ := open(t, srv, `write_timeout = "1s"`)
	defer tg.Close()
	ctx := context.Background()
	done := make(chan struct{})
	want := map[string]string{}
	retries := 0
	for b := range 10 {
		var recs []node.Record
		for i := range 50 {
			recs = append(recs, node.Record{Key: fmt.Sprintf("10.0.%d.%d", b, i), Value: cty.NumberIntVal(int64(b*100 + i))})
		}
		if b == 4 {
			go func() { defer close(done); srv.Restart(200 * time.Millisecond) }()
		}
		pending := prepare(t, tg, recs)
		for _, e := range pending {
			want[e.Key] = string(e.Data)
		}
		for attempt := 0; len(pending) > 0; attempt++ {
			if attempt > 200 {
				t.Fatalf("%d writes never succeeded: %v", len(pending), pending[0].Err)
			}
			tg.Update(ctx, pending)
			var again []node.Entry
			for _, e := range pending {
				if e.Err != nil {
					e.Err = nil
					again = append(again, e)
				}
			}
			retries += len(again)
			pending = again
			if len(again) > 0 {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	<-done
	t.Logf("%d writes retried", retries)
	actual, err := tg.Actual(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range actual {
		got[e.Key] = string(e.Data)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("bucket after the restart (-want +got):\n%s", diff)
	}
}

func TestRestartEmbedded(t *testing.T) { restartConverges(t, natstest.Embedded(t)) }

func TestPlanModeCreatesNothing(t *testing.T) {
	srv := natstest.Embedded(t)
	body := fmt.Sprintf("input = transform.extract.ips\nurl = %q\nbucket = \"planned\"", srv.URL())
	s := nodetest.MustBuild(t, Spec(), body, &node.Upstream{Type: node.Records}).Sink.(*Sink)
	env, _ := nodetest.Env(t, nil)
	tg, err := s.Open(context.Background(), env, node.ModePlan)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if es, err := tg.Actual(context.Background()); err != nil || len(es) != 0 {
		t.Fatalf("Actual of a missing bucket = %v, %v", es, err)
	}
	es := prepare(t, tg, records())
	tg.Update(context.Background(), es)
	if es[0].Err == nil {
		t.Fatal("plan-mode target accepted a write")
	}
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.KeyValue(context.Background(), "planned"); err == nil {
		t.Fatal("plan mode created the bucket")
	}
}
