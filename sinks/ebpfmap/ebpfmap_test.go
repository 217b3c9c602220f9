package ebpfmap

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

var records = &node.Upstream{Address: "transform.extract.ips", Type: node.Records}

// requireBPF skips without root or a bpffs, except in CI (env CI set),
// where these tests must run.
func requireBPF(t *testing.T) string {
	t.Helper()
	msg := ""
	if os.Geteuid() != 0 {
		msg = "needs root (CAP_BPF) to create BPF maps"
	} else if err := checkBPFFS("/sys/fs/bpf"); err != nil {
		msg = err.Error()
	}
	if msg != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("eBPF test cannot run in CI: %s", msg)
		}
		t.Skipf("skipping eBPF test: %s (run as root with `mount -t bpf bpf /sys/fs/bpf`)", msg)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	dir := "/sys/fs/bpf/pipeline-test-" + hex.EncodeToString(b)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func open(t *testing.T, body string) (*Target, *nodetest.HealthRecorder) {
	t.Helper()
	s := nodetest.MustBuild(t, Spec(), "input = transform.extract.ips\n"+body, records).Sink.(*Sink)
	env, h := nodetest.Env(t, nil)
	tg, err := s.Open(context.Background(), env, node.ModeRun)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tg.Close() })
	return tg.(*Target), h
}

func put(t *testing.T, tg *Target, recs ...node.Record) []node.Entry {
	t.Helper()
	var es []node.Entry
	for _, r := range recs {
		e, err := tg.Prepare(r)
		if err != nil {
			t.Fatalf("prepare %s: %v", r.Key, err)
		}
		es = append(es, e)
	}
	tg.Update(context.Background(), es)
	return es
}

func rec(k string, v cty.Value) node.Record { return node.Record{Key: k, Value: v} }

func TestCreateOpenMismatchRecreate(t *testing.T) {
	dir := requireBPF(t)
	pin := dir + "/allowed"
	body := func(value, extra string) string {
		return fmt.Sprintf("pin = %q\nkey { type = \"ipv4\" }\nvalue {\n type = %q\n from = 1\n}\n%s", pin, value, extra)
	}
	tg, _ := open(t, body("u32", ""))
	put(t, tg, rec("10.0.0.1", cty.EmptyObjectVal))
	tg.Close()
	if _, err := os.Stat(pin); err != nil {
		t.Fatalf("map not pinned: %v", err)
	}
	tg, _ = open(t, body("u32", "")) // reopen: same spec
	if got, _ := tg.Actual(context.Background()); len(got) != 1 {
		t.Fatalf("reopened map holds %d entries, want 1 (entries survive)", len(got))
	}
	tg.Close()

	s := nodetest.MustBuild(t, Spec(), "input = transform.extract.ips\n"+body("u64", ""), records).Sink.(*Sink)
	env, _ := nodetest.Env(t, nil)
	_, err := s.Open(context.Background(), env, node.ModeRun)
	if err == nil || !strings.Contains(err.Error(), "value size is 4, declared 8") || !strings.Contains(err.Error(), pin) {
		t.Fatalf("mismatch error = %v", err)
	}
	tg, _ = open(t, body("u64", `on_mismatch = "recreate"`))
	if tg.m.ValueSize() != 8 {
		t.Fatalf("recreated map value size %d", tg.m.ValueSize())
	}
}

func TestPlanModeCreatesNothing(t *testing.T) {
	dir := requireBPF(t)
	pin := dir + "/absent"
	s := nodetest.MustBuild(t, Spec(), fmt.Sprintf("input = transform.extract.ips\npin = %q\nkey { type = \"ipv4\" }\nvalue {\n type = \"u8\"\n from = 1\n}", pin), records).Sink.(*Sink)
	env, _ := nodetest.Env(t, nil)
	tg, err := s.Open(context.Background(), env, node.ModePlan)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if got, err := tg.Actual(context.Background()); err != nil || len(got) != 0 {
		t.Fatalf("Actual = %v, %v", got, err)
	}
	if _, err := os.Stat(pin); !os.IsNotExist(err) {
		t.Fatalf("plan mode created %s", pin)
	}
}

// TestEncodings writes through the target and reads the raw bytes back
// with cilium/ebpf.
func TestEncodings(t *testing.T) {
	dir := requireBPF(t)
	v4mapped := func(a ...byte) []byte { return append([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, a...) }
	le32 := func(n uint32) []byte { return []byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24)} }
	cases := []struct {
		name, mapType, key, value string
		record                    node.Record
		wantKey, wantValue        []byte
		wantCanonical             string
	}{
		{"ipv4", "hash", `type = "ipv4"`, "type = \"u32\"\nfrom = 7", rec("10.1.2.3", cty.EmptyObjectVal),
			[]byte{10, 1, 2, 3}, le32(7), "10.1.2.3"},
		{"ipv6", "hash", `type = "ipv6"`, "type = \"u8\"\nfrom = 1", rec("fd00::1", cty.EmptyObjectVal),
			[]byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, []byte{1}, "fd00::1"},
		{"ip dual stack", "hash", `type = "ip"`, "type = \"u8\"\nfrom = 1", rec("192.168.0.9", cty.EmptyObjectVal),
			v4mapped(192, 168, 0, 9), []byte{1}, "192.168.0.9"},
		{"ipv4 prefix masked", "lpm_trie", `type = "ipv4_prefix"`, "type = \"u32\"\nfrom = record.value.id", rec("10.1.2.3/24", cty.ObjectVal(map[string]cty.Value{"id": cty.NumberIntVal(42)})),
			append(le32(24), 10, 1, 2, 0), le32(42), "10.1.2.0/24"},
		{"ip prefix v4", "lpm_trie", `type = "ip_prefix"`, "type = \"u8\"\nfrom = 1", rec("10.0.0.0/8", cty.EmptyObjectVal),
			append(le32(104), v4mapped(10, 0, 0, 0)...), []byte{1}, "10.0.0.0/8"},
		{"u16 big endian", "hash", "type = \"u16\"\nbyte_order = \"be\"\nfrom = record.value.port", "type = \"string(8)\"\nfrom = record.value.name",
			rec("k", cty.ObjectVal(map[string]cty.Value{"port": cty.NumberIntVal(443), "name": cty.StringVal("https")})),
			[]byte{0x01, 0xbb}, []byte("https\x00\x00\x00"), "443"},
		{"ipv6 prefix", "lpm_trie", `type = "ipv6_prefix"`, "type = \"u8\"\nfrom = 1", rec("fd00:1::/32", cty.EmptyObjectVal),
			append(le32(32), 0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), []byte{1}, "fd00:1::/32"},
		{"plain IP as prefix", "lpm_trie", `type = "ip_prefix"`, "type = \"u8\"\nfrom = 1", rec("fd00::7", cty.EmptyObjectVal),
			append(le32(128), 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7), []byte{1}, "fd00::7/128"},
		{"u64 little endian and bytes list", "hash", "type = \"u64\"\nbyte_order = \"le\"\nfrom = record.value.id", "type = \"bytes(3)\"\nfrom = [1, 2, 255]",
			rec("k", cty.ObjectVal(map[string]cty.Value{"id": cty.NumberIntVal(0x0102030405)})),
			[]byte{5, 4, 3, 2, 1, 0, 0, 0}, []byte{1, 2, 255}, "4328719365"},
		{"string key", "hash", "type = \"string(8)\"", "type = \"ipv4\"\nfrom = record.value", rec("eth0", cty.StringVal("192.0.2.1")),
			[]byte("eth0\x00\x00\x00\x00"), []byte{192, 0, 2, 1}, "eth0"},
		{"array u32", "array", "type = \"u32\"\nfrom = 3", "type = \"bytes(2)\"\nfrom = \"beef\"", rec("x", cty.EmptyObjectVal),
			le32(3), []byte{0xbe, 0xef}, "3"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := fmt.Sprintf("pin = %q\ntype = %q\nmax_entries = 16\nkey {\n%s\n}\nvalue {\n%s\n}", filepath.Join(dir, fmt.Sprint("m", i)), tc.mapType, tc.key, tc.value)
			tg, _ := open(t, body)
			es := put(t, tg, tc.record)
			if es[0].Err != nil || es[0].Key != tc.wantCanonical {
				t.Fatalf("entry %q err %v, want key %q", es[0].Key, es[0].Err, tc.wantCanonical)
			}
			got := make([]byte, len(tc.wantValue))
			if err := tg.m.Lookup(tc.wantKey, &got); err != nil {
				t.Fatalf("lookup %x: %v", tc.wantKey, err)
			}
			if !bytes.Equal(got, tc.wantValue) {
				t.Fatalf("value %x, want %x", got, tc.wantValue)
			}
			actual, err := tg.Actual(context.Background())
			if err != nil || len(actual) != 1 || actual[0].Key != tc.wantCanonical || !actual[0].Value.RawEquals(es[0].Value) {
				t.Fatalf("Actual = %v, %v", actual, err)
			}
			checkScan(t, tg)
		})
	}
}

// TestStructLayout checks C layout: struct { __u8 a; __u32 b; __u16 c; } is
// 12 bytes with b at offset 4 and c at 8.
func TestStructLayout(t *testing.T) {
	dir := requireBPF(t)
	tg, _ := open(t, fmt.Sprintf(`pin = %q
key { type = "ipv4" }
value {
  type = "struct"
  field "a" {
    type = "u8"
    from = 1
  }
  field "b" {
    type = "u32"
    from = record.value.id
  }
  field "c" {
    type = "u16"
    byte_order = "be"
    from = 258
  }
}`, dir+"/s"))
	if tg.s.spec.ValueSize != 12 {
		t.Fatalf("struct size %d, want 12", tg.s.spec.ValueSize)
	}
	put(t, tg, rec("10.0.0.1", cty.ObjectVal(map[string]cty.Value{"id": cty.NumberIntVal(0x01020304)})))
	got := make([]byte, 12)
	if err := tg.m.Lookup([]byte{10, 0, 0, 1}, &got); err != nil {
		t.Fatal(err)
	}
	want := []byte{1, 0, 0, 0, 4, 3, 2, 1, 1, 2, 0, 0}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("struct bytes (-want +got):\n%s", d)
	}
}

func TestPrepareRejectsBadRecords(t *testing.T) {
	dir := requireBPF(t)
	tg, _ := open(t, fmt.Sprintf("pin = %q\nkey { type = \"ipv4\" }\nvalue {\n type = \"struct\"\n field \"n\" {\n  type = \"u8\"\n  from = record.value.n\n }\n field \"s\" {\n  type = \"string(4)\"\n  from = record.value.s\n }\n}", dir+"/bad"))
	obj := func(n int64, s string) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"n": cty.NumberIntVal(n), "s": cty.StringVal(s)})
	}
	for name, r := range map[string]node.Record{
		"not an IP":       rec("pod-a", obj(1, "ab")),
		"IPv6 into ipv4":  rec("fd00::1", obj(1, "ab")),
		"number too big":  rec("10.0.0.1", obj(256, "ab")),
		"string too long": rec("10.0.0.1", obj(1, "abcd")),
		"missing field":   rec("10.0.0.1", cty.EmptyObjectVal),
	} {
		if _, err := tg.Prepare(r); err == nil {
			t.Errorf("%s: Prepare accepted %v", name, r)
		}
	}
}

func TestDeleteMissingAndPartialBatches(t *testing.T) {
	dir := requireBPF(t)
	tg, _ := open(t, fmt.Sprintf("pin = %q\nkey { type = \"ipv4\" }\nvalue {\n type = \"u8\"\n from = 1\n}", dir+"/d"))
	es := put(t, tg, rec("10.0.0.1", cty.EmptyObjectVal), rec("10.0.0.2", cty.EmptyObjectVal), rec("10.0.0.3", cty.EmptyObjectVal))
	tg.Delete(context.Background(), []node.Entry{es[0]})
	missingFirst := []node.Entry{es[0], es[1], es[2]} // es[0] is already gone
	tg.Delete(context.Background(), missingFirst)
	for _, e := range missingFirst {
		if e.Err != nil {
			t.Fatalf("delete %s: %v", e.Key, e.Err)
		}
	}
	if got, _ := tg.Actual(context.Background()); len(got) != 0 {
		t.Fatalf("left %v", got)
	}
}

func TestMapFull(t *testing.T) {
	dir := requireBPF(t)
	tg, h := open(t, fmt.Sprintf("pin = %q\nmax_entries = 4\nkey { type = \"ipv4\" }\nvalue {\n type = \"u8\"\n from = 1\n}", dir+"/full"))
	var recs []node.Record
	for i := range 6 {
		recs = append(recs, rec(fmt.Sprint("10.0.0.", i+1), cty.EmptyObjectVal))
	}
	es := put(t, tg, recs...)
	failed := 0
	for _, e := range es {
		if e.Err != nil {
			failed++
			if !strings.Contains(e.Err.Error(), "is full (max_entries 4)") || !strings.Contains(e.Err.Error(), dir+"/full") {
				t.Fatalf("error does not name the map and its capacity: %v", e.Err)
			}
			if !isFull(e.Err) {
				t.Fatalf("error does not wrap E2BIG: %v", e.Err)
			}
		}
	}
	if failed != 2 {
		t.Fatalf("%d entries failed, want 2", failed)
	}
	if got, _ := tg.Actual(context.Background()); len(got) != 4 {
		t.Fatalf("the entries that fit must stay: %d", len(got))
	}
	if h.State() != node.Degraded {
		t.Fatalf("health %v, want degraded", h.State())
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTargetSuite(t *testing.T) {
	dir := requireBPF(t)
	n := 0
	recs := []node.Record{rec("10.0.0.1", cty.EmptyObjectVal), rec("10.0.0.2", cty.EmptyObjectVal), rec("fd00::3", cty.EmptyObjectVal)}
	nodetest.RunTargetSuite(t, func(t *testing.T) node.Target {
		n++
		tg, _ := open(t, fmt.Sprintf("pin = %q\nkey { type = \"ip\" }\nvalue {\n type = \"u32\"\n from = 5\n}", fmt.Sprintf("%s/suite%d", dir, n)))
		return tg
	}, recs)
}

// TestMissingBPFFSExplained: a pin outside a bpffs fails at Open with the
// mount command, never at validate.
func TestMissingBPFFSExplained(t *testing.T) {
	dir := t.TempDir() // tmpfs or disk, not bpffs
	s := nodetest.MustBuild(t, Spec(), fmt.Sprintf("input = transform.extract.ips\npin = %q\nkey { type = \"ipv4\" }\nvalue {\n type = \"u8\"\n from = 1\n}", dir+"/m"), records).Sink.(*Sink)
	env, _ := nodetest.Env(t, nil)
	_, err := s.Open(context.Background(), env, node.ModeRun)
	if err == nil || !strings.Contains(err.Error(), "mount -t bpf bpf /sys/fs/bpf") {
		t.Fatalf("Open outside a bpffs: %v", err)
	}
	if err := explain(unix.EPERM); !strings.Contains(err.Error(), "CAP_BPF") {
		t.Fatalf("EPERM explained as %v", err)
	}
}
