package nats

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/pipeline/pipeline/schema"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, srv *natstest.Server, extra string) *Target {
	t.Helper()
	body := fmt.Sprintf("input = transform.extract.ips\nurl = [%q]\nsubject = \"pods.${record.value.ns}\"\nreconnect_wait = \"50ms\"\n%s", srv.URL(), extra)
	s := nodetest.MustBuild(t, Spec(), body, &node.Upstream{Address: "transform.extract.ips", Type: node.Records}).Sink.(*Sink)
	env, _ := nodetest.Env(t, nil)
	tg, err := s.Open(context.Background(), env, node.ModeRun)
	if err != nil {
		t.Fatal(err)
	}
	return tg.(*Target)
}

func rec(k, ns string) node.Record {
	return node.Record{Key: k, Value: cty.ObjectVal(map[string]cty.Value{"ns": cty.StringVal(ns)})}
}

func records() []node.Record {
	return []node.Record{rec("10.0.0.1", "a"), rec("10.0.0.2", "b"), rec("fd00::1", "a")}
}

func client(t *testing.T, srv *natstest.Server) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(srv.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func TestTargetSuite(t *testing.T) {
	srv := natstest.Embedded(t)
	nodetest.RunTargetSuite(t, func(t *testing.T) node.Target { return open(t, srv, "") }, records())
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

func TestCorePublishBodyAndHeaders(t *testing.T) {
	srv := natstest.Embedded(t)
	nc := client(t, srv)
	sub, err := nc.SubscribeSync("pods.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil { // the server knows the interest before the sink publishes
		t.Fatal(err)
	}
	tg := open(t, srv, "")
	defer tg.Close()
	es := prepare(t, tg, records()[:1])
	tg.Update(context.Background(), es)
	tg.Delete(context.Background(), es)
	var got []map[string]any
	for range 2 {
		m, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var b map[string]any
		if err := json.Unmarshal(m.Data, &b); err != nil {
			t.Fatal(err)
		}
		if m.Subject != "pods.a" || m.Header.Get("Pipeline-Op") != b["op"] || m.Header.Get("Nats-Msg-Id") == "" {
			t.Fatalf("message on %s with headers %v", m.Subject, m.Header)
		}
		if _, err := time.Parse(time.RFC3339Nano, b["time"].(string)); err != nil {
			t.Fatalf("time: %v", err)
		}
		delete(b, "time")
		got = append(got, b)
	}
	want := []map[string]any{
		{"op": "upsert", "key": "10.0.0.1", "value": map[string]any{"ns": "a"}, "source": "transform.extract.ips", "generation": 1.0},
		{"op": "delete", "key": "10.0.0.1", "source": "transform.extract.ips", "generation": 2.0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("bodies (-want +got):\n%s", diff)
	}
}

func TestBadSubjectSkipsRecord(t *testing.T) {
	srv := natstest.Embedded(t)
	tg := open(t, srv, "")
	defer tg.Close()
	if _, err := tg.Prepare(rec("k", "has space")); err == nil {
		t.Fatal("a subject with a space was accepted")
	}
	if _, err := tg.Prepare(node.Record{Key: "k", Value: cty.EmptyObjectVal}); err == nil {
		t.Fatal("a subject over a missing attribute was accepted")
	}
	// A subject computed from a secret is used raw, and never shown.
	secret := node.Record{Key: "k", Value: cty.ObjectVal(map[string]cty.Value{"ns": schema.MarkSensitive(cty.StringVal("Q Q"))})}
	if _, err := tg.Prepare(secret); err == nil || strings.Contains(err.Error(), "Q") || !strings.Contains(err.Error(), "sensitive") {
		t.Fatalf("a bad sensitive subject gave %v", err)
	}
	secret.Value = cty.ObjectVal(map[string]cty.Value{"ns": schema.MarkSensitive(cty.StringVal("q"))})
	e, err := tg.Prepare(secret)
	if err != nil || !schema.IsSensitive(e.Value) || !bytes.Contains(e.Data, []byte(".q")) {
		t.Fatalf("a sensitive subject: %v, %#v, %q", err, e.Value, e.Data)
	}
}

func stream(t *testing.T, nc *nats.Conn) jetstream.Stream {
	t.Helper()
	js, _ := jetstream.New(nc)
	st, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "PODS", Subjects: []string{"pods.>"}, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// publishUntilAcked drives the target like the engine: failed entries are
// retried (same prepared entry, so same message id) until every one is acked.
func publishUntilAcked(t *testing.T, tg node.Target, es []node.Entry, stop func()) int {
	t.Helper()
	retries := 0
	pending := es
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt > 200 {
			t.Fatalf("%d messages never acked", len(pending))
		}
		tg.Update(context.Background(), pending)
		var again []node.Entry
		for _, e := range pending {
			if e.Err != nil {
				again = append(again, node.Entry{Key: e.Key, Value: e.Value, Data: e.Data})
			}
		}
		if stop != nil && attempt == 0 {
			stop()
		}
		retries += len(again)
		pending = again
		if len(again) > 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	return retries
}

func TestJetStreamAcks(t *testing.T) {
	srv := natstest.Embedded(t)
	nc := client(t, srv)
	st := stream(t, nc)
	tg := open(t, srv, "jetstream = true\nmax_in_flight = 2")
	defer tg.Close()
	es := prepare(t, tg, records())
	// The messages land but their acks are lost: the retry carries the
	// same ids and the stream drops the copies.
	js, _ := jetstream.New(nc)
	for _, e := range es {
		m, err := tg.encode("upsert", e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishMsg(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	publishUntilAcked(t, tg, es, nil)
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 3 {
		t.Fatalf("stream holds %d messages, want 3", info.State.Msgs)
	}
}

func TestJetStreamWithoutStreamFails(t *testing.T) {
	srv := natstest.Embedded(t)
	tg := open(t, srv, "jetstream = true\nack_timeout = \"1s\"")
	defer tg.Close()
	es := prepare(t, tg, records())
	tg.Update(context.Background(), es)
	for _, e := range es {
		if e.Err == nil {
			t.Fatalf("%s acked without a stream", e.Key)
		}
	}
}

// restartWhilePublishing restarts the server (same store) while batches are
// published with acks: every message is acked in the end and the stream
// holds each exactly once.
func restartWhilePublishing(t *testing.T, srv *natstest.Server) {
	st := stream(t, client(t, srv))
	tg := open(t, srv, "jetstream = true\nack_timeout = \"1s\"")
	defer tg.Close()
	var all []node.Entry
	var restarted atomic.Bool
	done := make(chan struct{})
	retries := 0
	for b := range 10 {
		var recs []node.Record
		for i := range 50 {
			recs = append(recs, rec(fmt.Sprintf("10.0.%d.%d", b, i), fmt.Sprintf("n%d", i%5)))
		}
		es := prepare(t, tg, recs)
		if b == 4 { // restart while this batch is in flight
			go func() { defer close(done); srv.Restart(200 * time.Millisecond); restarted.Store(true) }()
		}
		retries += publishUntilAcked(t, tg, es, nil)
		all = append(all, es...)
	}
	<-done
	t.Logf("%d publishes retried", retries)
	if !restarted.Load() {
		t.Fatal("server was not restarted")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != uint64(len(all)) {
		t.Fatalf("stream holds %d messages, want %d (each exactly once)", info.State.Msgs, len(all))
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range len(all) {
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		id := m.Headers().Get("Nats-Msg-Id")
		if seen[id] {
			t.Fatalf("message id %s seen twice", id)
		}
		seen[id] = true
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("timed out")
	}
}

func TestRestartEmbedded(t *testing.T) { restartWhilePublishing(t, natstest.Embedded(t)) }
