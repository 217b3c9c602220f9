package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pipeline/pipeline/internal/natstest"
)

// kvConfig mirrors static records into a bucket under the prefix v1.
const kvConfig = `
source "static" "ips" {
  records = %s
}
sink "nats_kv" "mirror" {
  input      = source.static.ips
  url        = "%s"
  bucket     = "%s"
  key_prefix = "v1."
  prune      = true
}
`

// TestPlanNATSKV plans a nats_kv sink against a real bucket with drift:
// the plan lists the drift, the bucket's stream is unchanged after it, and
// a bucket that does not exist is "would be created" and stays absent.
func TestPlanNATSKV(t *testing.T) {
	srv := natstest.Embedded(t)
	dir := t.TempDir()
	r := launch(t, dir, fmt.Sprintf(kvConfig, `{ a = 1, b = 2, c = 3 }`, srv.URL(), "pod-ips"))
	eventually(t, "the bucket holds 3 keys", func() bool { return len(bucketState(t, srv, "pod-ips").keys) == 3 })
	if err := r.stop(); err != nil {
		t.Fatalf("run: %v\n%s", err, r.stderr.String())
	}

	cfg := filepath.Join(dir, "drift.hcl")
	writeConfig(t, cfg, fmt.Sprintf(kvConfig, `{ a = 1, b = 20, d = 4 }`, srv.URL(), "pod-ips"))
	before := bucketState(t, srv, "pod-ips")
	out, code := planCLI("plan", "--json", cfg)
	if code != 2 {
		t.Fatalf("plan exited %d, want 2:\n%s", code, out)
	}
	var doc struct {
		Sinks []struct {
			Target struct {
				Location string `json:"location"`
				Exists   bool   `json:"exists"`
			} `json:"target"`
			Changes []struct {
				Action, Key string
				Shown       struct{ Before, After string }
			} `json:"changes"`
		} `json:"sinks"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got []string
	for _, c := range doc.Sinks[0].Changes {
		got = append(got, fmt.Sprintf("%s %s %s->%s", c.Action, c.Key, c.Shown.Before, c.Shown.After))
	}
	want := []string{"update v1.b 2->20", "delete v1.c 3->", "create v1.d ->4"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if l := doc.Sinks[0].Target.Location; l != "bucket pod-ips (prefix v1.)" || !doc.Sinks[0].Target.Exists {
		t.Errorf("target %+v", doc.Sinks[0].Target)
	}
	if diff := cmp.Diff(before, bucketState(t, srv, "pod-ips"), cmp.AllowUnexported(bucket{})); diff != "" {
		t.Errorf("plan changed the bucket (-before +after):\n%s", diff)
	}

	writeConfig(t, cfg, fmt.Sprintf(kvConfig, `{ a = 1 }`, srv.URL(), "absent"))
	text, code := planCLI("plan", cfg)
	if code != 2 || !strings.Contains(text, "(bucket absent (prefix v1.), kv_bucket, would be created)") {
		t.Errorf("plan exited %d, want 2 and a bucket that would be created:\n%s", code, text)
	}
	if b := bucketState(t, srv, "absent"); b.exists {
		t.Errorf("plan created the bucket")
	}
}

// planCLI runs the CLI and returns stdout followed by stderr, and the exit code.
func planCLI(args ...string) (string, int) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return out.String() + errb.String(), code
}

func writeConfig(t *testing.T, path, src string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

const embeddedKV = `
source "static" "ips" {
  records = { a = 1, b = 2 }
}
sink "nats_kv" "hub" {
  input      = source.static.ips
  bucket     = "pod-ips"
  key_prefix = "v1."
  embedded {
    listen    = "%s"
    store_dir = "nats"
  }
}
`

// TestPlanNATSKVEmbedded: plan starts no embedded server. With none
// running it reads the bucket as empty and creates no store directory;
// with a hub running it reads the hub's bucket as a client.
func TestPlanNATSKVEmbedded(t *testing.T) {
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
	cfg := filepath.Join(dir, "p.hcl")
	writeConfig(t, cfg, fmt.Sprintf(embeddedKV, addr))
	text, code := planCLI("plan", cfg)
	if code != 2 || !strings.Contains(text, "on the embedded server "+addr+", not running: read as empty") {
		t.Errorf("plan exited %d, want 2 and the server not running:\n%s", code, text)
	}
	if _, err := os.Stat(filepath.Join(dir, "nats")); !os.IsNotExist(err) {
		t.Errorf("plan created the store directory (%v)", err)
	}

	hubDir := t.TempDir()
	r := launch(t, hubDir, fmt.Sprintf(embeddedKV, addr))
	defer func() {
		if err := r.stop(); err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	eventually(t, "the hub's bucket holds 2 keys", func() bool {
		text, code = planCLI("plan", cfg)
		return code == 0
	})
	if !strings.Contains(text, "(bucket pod-ips (prefix v1.), kv_bucket, 2 entries)") {
		t.Errorf("plan against the running hub:\n%s", text)
	}
}

// bucket is what plan must leave alone: the keys with their revisions and
// the stream's last sequence.
type bucket struct {
	exists  bool
	keys    []string
	lastSeq uint64
}

func bucketState(t *testing.T, srv *natstest.Server, name string) bucket {
	t.Helper()
	nc, err := nats.Connect(srv.URL())
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
	if _, err := js.Stream(ctx, "KV_"+name); err != nil {
		return bucket{}
	}
	kv, err := js.KeyValue(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	b := bucket{exists: true}
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for k := range lister.Keys() {
		e, err := kv.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		b.keys = append(b.keys, fmt.Sprintf("%s@%d=%s", k, e.Revision(), e.Value()))
	}
	sort.Strings(b.keys)
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := st.(*jetstream.KeyValueBucketStatus); ok {
		b.lastSeq = s.StreamInfo().State.LastSeq
	}
	return b
}
