//go:build integration

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/common/model"

	"github.com/pipeline/pipeline/internal/natstest"
)

// clusterHub mirrors the objects of a directory of files into a bucket of
// three replicas; clusterAgent follows the bucket into a log.
const (
	clusterHub = `
source "files" "objs" {
  paths         = ["objs/*.json"]
  poll_interval = "1s"
  allow_empty   = true
}
transform "extract" "keys" {
  input = source.files.objs
  key   = object.metadata.name
  value = { n = object.metadata.name }
}
sink "nats_kv" "hub" {
  input          = transform.extract.keys
  url            = %[1]s
  bucket         = "pod-ips"
  replicas       = 3
  reconnect_wait = "100ms"
}
`
	clusterAgent = `
source "nats_kv" "agent" {
  url            = %[1]s
  bucket         = "pod-ips"
  reconnect_wait = "100ms"
}
sink "log" "out" {
  input  = source.nats_kv.agent
  path   = "out.log"
  format = "json"
}
`
)

// TestJetStreamCluster runs a hub and an agent against a 3-node JetStream
// cluster (separate nats-server processes on loopback) holding a bucket of
// three replicas. While the hub writes a new key every 20 ms, the node the
// hub is connected to is killed (and restarted), then the node leading the
// bucket's stream: the hub reconnects and reports it, nothing written is
// lost, and the agent ends up with every key.
func TestJetStreamCluster(t *testing.T) {
	servers := natstest.Cluster(t, 3)
	var quoted []string
	for _, u := range natstest.URLs(servers) {
		quoted = append(quoted, fmt.Sprintf("%q", u))
	}
	urls := "[" + strings.Join(quoted, ", ") + "]"
	hubDir, agentDir := t.TempDir(), t.TempDir()
	objs := filepath.Join(hubDir, "objs")
	if err := os.MkdirAll(objs, 0o755); err != nil {
		t.Fatal(err)
	}
	hub := launch(t, hubDir, fmt.Sprintf(clusterHub, urls))
	defer stopOK(t, hub)
	agent := launch(t, agentDir, fmt.Sprintf(clusterAgent, urls))
	defer stopOK(t, agent)

	// The writer adds key kNNNN every 20 ms until stopped.
	var (
		mu      sync.Mutex
		written []string
	)
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			name := fmt.Sprintf("k%04d", i)
			obj := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"d"}}`, name)
			tmp := filepath.Join(hubDir, name+".tmp")
			if err := os.WriteFile(tmp, []byte(obj), 0o644); err != nil {
				t.Error(err)
				return
			}
			if err := os.Rename(tmp, filepath.Join(objs, name+".json")); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			written = append(written, name)
			mu.Unlock()
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-writerDone
	}()
	agentLog := filepath.Join(agentDir, "out.log")
	progress := func(what string, more int) {
		t.Helper()
		start := len(logState(t, agentLog))
		deadline := time.Now().Add(30 * time.Second)
		for len(logState(t, agentLog)) < start+more {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the agent got %d keys, no %d more in 30s\nhub:\n%s\nagent:\n%s", what, len(logState(t, agentLog)), more,
					hub.stderr.String(), agent.stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	progress("start", 20)

	first := hostOf(t, servers, "sink.nats_kv.hub")
	t.Logf("killing %s, the hub's server", first.Name)
	first.Stop()
	progress("one node down", 30)
	first.Restart(0)
	progress("node back", 30)

	leader := streamLeader(t, servers, "KV_pod-ips")
	t.Logf("killing %s, the bucket stream's leader", leader.Name)
	leader.Stop()
	progress("leader down", 30)

	close(stop)
	<-writerDone
	mu.Lock()
	want := slices.Clone(written)
	mu.Unlock()
	slices.Sort(want)
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := logState(t, agentLog)
		if slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			missing := 0
			for _, k := range want {
				if _, ok := slices.BinarySearch(got, k); !ok {
					missing++
				}
			}
			t.Fatalf("the agent holds %d keys, the hub was given %d (%d missing)\nhub:\n%s", len(got), len(want), missing, hub.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%d keys written through two node kills, all in the agent", len(want))
	m := scrape(t, hub.addr)
	if r := m.sum("pipeline_node_nats_reconnects_total", model.LabelSet{"node": "sink.nats_kv.hub"}); r < 1 {
		t.Errorf("the hub's reconnects_total = %v after its server was killed, want >= 1", r)
	}
	if !strings.Contains(hub.stderr.String(), "nats connection lost") {
		t.Errorf("the hub logged no lost connection:\n%s", hub.stderr.String())
	}
	if !ready(hub.addr) || !ready(agent.addr) {
		t.Errorf("hub ready %v, agent ready %v after the cluster recovered", ready(hub.addr), ready(agent.addr))
	}
}

// hostOf returns the server a client named name is connected to.
func hostOf(t *testing.T, servers []*natstest.Server, name string) *natstest.Server {
	t.Helper()
	for _, s := range servers {
		names, err := clientNames(s)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if slices.Contains(names, name) {
			return s
		}
	}
	t.Fatalf("no server has a client named %s", name)
	return nil
}

// clientNames lists the names of the clients connected to s, from its
// monitoring endpoint (a pipeline node's client is named by its address).
func clientNames(s *natstest.Server) ([]string, error) {
	if s.Monitor == 0 {
		return nil, errors.New("server has no monitoring port")
	}
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://127.0.0.1:" + strconv.Itoa(s.Monitor) + "/connz")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var connz struct {
		Connections []struct {
			Name string `json:"name"`
		} `json:"connections"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&connz); err != nil {
		return nil, fmt.Errorf("decode connz: %w", err)
	}
	var out []string
	for _, c := range connz.Connections {
		out = append(out, c.Name)
	}
	return out, nil
}

// streamLeader returns the server leading the stream.
func streamLeader(t *testing.T, servers []*natstest.Server, stream string) *natstest.Server {
	t.Helper()
	nc, err := nats.Connect(strings.Join(natstest.URLs(servers), ","))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Cluster == nil {
		t.Fatalf("stream %s has no cluster info", stream)
	}
	if info.Config.Replicas != 3 {
		t.Fatalf("stream %s has %d replicas, want 3", stream, info.Config.Replicas)
	}
	for _, srv := range servers {
		if srv.Name == info.Cluster.Leader {
			return srv
		}
	}
	t.Fatalf("stream leader %q is none of the servers", info.Cluster.Leader)
	return nil
}
