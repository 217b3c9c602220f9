package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/google/go-cmp/cmp"

	"github.com/pipeline/pipeline/engine/node/nodetest"
	auditsink "github.com/pipeline/pipeline/sinks/audit"
)

// TestRobustness runs `pipeline run` as its own process under a seeded,
// random schedule of faults while the objects it reads change: files
// rewritten in place while they may be read, the pin deleted, the pin
// replaced by an empty map, the process killed with SIGKILL and started
// again, reloads (SIGHUP). At the end the map must equal a model computed
// from the final files, and the audit trail must verify and replay to the
// same records: no change recorded that did not happen, none missing
// (checkTrail).
//
// The short form (12 faults) runs in make test; make soak runs it for
// PIPELINE_SOAK (a duration) and prints what it survived. PIPELINE_SEED
// replays a schedule.
func TestRobustness(t *testing.T) {
	if os.Geteuid() != 0 {
		missingInCI(t, "writing pinned maps needs root (bpffs)")
	}
	bin, err := exec.LookPath("pipeline") // the test binary, installed by TestMain
	if err != nil {
		t.Fatal(err)
	}
	seed, steps, until := robustSchedule(t, 12)
	rng := rand.New(rand.NewPCG(seed, 7))

	bpfDir, err := os.MkdirTemp("/sys/fs/bpf", "robust-")
	if err != nil {
		missingInCI(t, "no bpffs at /sys/fs/bpf: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(bpfDir) })
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	pin, trail := filepath.Join(bpfDir, "m"), filepath.Join(dir, "audit.jsonl")
	cfg := filepath.Join(dir, "p.hcl")
	writeConfig(t, cfg, fmt.Sprintf(`
source "files" "pods" {
  paths         = [%q]
  poll_interval = "1s"
}
transform "extract" "r" {
  input = source.files.pods
  key   = "${object.metadata.namespace}/${object.metadata.name}"
  value = { prio = object.spec.priority }
}
sink "ebpf_map" "m" {
  input       = transform.extract.r
  pin         = %q
  max_entries = 256
  prune       = true
  resync      = "1s"
  key {
    type = "string(32)"
  }
  value {
    type = "u32"
    from = record.value.prio
  }
}
sink "audit" "a" {
  input = transform.extract.r
  path  = %q
  fsync = "always"
}
`, filepath.Join(data, "*.yaml"), pin, trail))

	model := map[string]uint32{} // ns/name -> priority, what the files say
	write := func(name string, prio uint32, inPlace bool) {
		path := filepath.Join(data, name+".yaml")
		body := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: ns\nspec:\n  priority: %d\n", name, prio)
		if inPlace { // a reader may see the first half
			if err := os.WriteFile(path, []byte(body[:len(body)/2]), 0o644); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		model["ns/"+name] = prio
	}
	for i := range 5 {
		write(fmt.Sprint("p", i), uint32(i), false)
	}
	p := startPipeline(t, bin, cfg)
	defer func() { p.Process.Kill(); p.Wait() }()
	survived := map[string]int{}
	for step := 0; step < steps && (until.IsZero() || time.Now().Before(until)); step++ {
		switch f := rng.IntN(9); {
		case f < 3:
			name := fmt.Sprint("p", rng.IntN(12))
			if _, ok := model["ns/"+name]; ok && rng.IntN(3) == 0 {
				if err := os.Remove(filepath.Join(data, name+".yaml")); err != nil {
					t.Fatal(err)
				}
				delete(model, "ns/"+name)
				survived["object deleted"]++
			} else {
				write(name, uint32(rng.IntN(1000)), rng.IntN(2) == 0)
				survived["file rewritten"]++
			}
		case f == 3:
			os.Remove(pin)
			survived["pin deleted"]++
		case f == 4:
			replacePin(t, pin)
			survived["pin replaced"]++
		case f == 5:
			p.Process.Signal(syscall.SIGKILL)
			p.Wait()
			p = startPipeline(t, bin, cfg)
			survived["pipeline killed -9 and restarted"]++
		case f == 6:
			p.Process.Signal(syscall.SIGHUP)
			survived["reload (SIGHUP)"]++
		default:
			survived["pause"]++
		}
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := readStringMap(pin)
		if err == nil && cmp.Equal(model, got) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the map does not equal the model after 2 minutes (-model +map):\n%s%v\nlogs:\n%s", cmp.Diff(model, got), err, tailOf(&robustLogs))
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.Process.Signal(syscall.SIGTERM)
	p.Wait()
	checkTrail(t, trail, model)
	t.Logf("survived: %v", survived)
	if !until.IsZero() {
		fmt.Printf("soak: seed %d survived %v\n", seed, survived)
	}
}

// robustSchedule is the seed of a robustness test's schedule (random, or
// PIPELINE_SEED) and how long it runs: steps faults, or until a time when
// PIPELINE_SOAK gives a duration.
func robustSchedule(t *testing.T, steps int) (seed uint64, n int, until time.Time) {
	t.Helper()
	seed = uint64(time.Now().UnixNano())
	if s := os.Getenv("PIPELINE_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d (PIPELINE_SEED=%d replays it)", seed, seed)
	if d := os.Getenv("PIPELINE_SOAK"); d != "" {
		dur, err := time.ParseDuration(d)
		if err != nil {
			t.Fatal(err)
		}
		return seed, 1 << 30, time.Now().Add(dur)
	}
	return seed, steps, time.Time{}
}

// robustLogs holds the logs of the pipeline processes, for a failure.
var robustLogs nodetest.LogBuffer

// tailOf is the end of what l holds, for a failure's message.
func tailOf(l *nodetest.LogBuffer) string {
	s := l.String()
	return s[max(0, len(s)-4000):]
}

// startPipeline starts `pipeline run` on cfg and waits until it runs (its
// "running" log line, logged once its SIGHUP handler is set): a signal sent
// before the process reaches its main function ends it, as it ends any
// program that has not set up its handlers yet.
func startPipeline(t *testing.T, bin, cfg string) *exec.Cmd {
	t.Helper()
	started := strings.Count(robustLogs.String(), "msg=running")
	cmd := exec.Command(bin, "run", "--listen", "127.0.0.1:0", cfg)
	cmd.Stdout, cmd.Stderr = &robustLogs, &robustLogs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for strings.Count(robustLogs.String(), "msg=running") == started {
		if time.Now().After(deadline) {
			t.Fatalf("pipeline run did not start within a minute:\n%s", tailOf(&robustLogs))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cmd
}

// replacePin puts an empty map of the same shape at pin, as someone
// recreating it would.
func replacePin(t *testing.T, pin string) {
	t.Helper()
	os.Remove(pin)
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 32, ValueSize: 4, MaxEntries: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Pin(pin); err != nil && !errors.Is(err, fs.ErrExist) { // the pipeline pinned its own first
		t.Fatal(err)
	}
}

// readStringMap reads a pinned map of string(32) keys and u32 values.
func readStringMap(pin string) (map[string]uint32, error) {
	m, err := ebpf.LoadPinnedMap(pin, &ebpf.LoadPinOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer m.Close()
	out := map[string]uint32{}
	var k [32]byte
	var v [4]byte
	it := m.Iterate()
	for it.Next(&k, &v) {
		out[string(bytes.TrimRight(k[:], "\x00"))] = binary.NativeEndian.Uint32(v[:])
	}
	return out, it.Err()
}

// checkTrail checks the audit trail against the model of the final
// sources: its chain verifies, it replays to the model (every change is
// in it, deletes made around a kill included), and it records nothing
// unchanged as a change (an upsert of the value a key holds, a delete of
// a key it does not hold).
func checkTrail(t *testing.T, trail string, model map[string]uint32) {
	t.Helper()
	files, err := auditsink.TrailFiles([]string{trail})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := auditsink.Verify(files, trail+".checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Problem != nil {
		t.Errorf("the audit trail does not verify: %s", rep.Problem)
	}
	replayed, unchanged := replayTrail(t, files)
	if d := cmp.Diff(model, replayed); d != "" {
		t.Errorf("the audit trail replays to another state (-model +trail):\n%s", d)
	}
	for _, u := range unchanged {
		t.Errorf("the audit trail records an unchanged key as a change: %s", u)
	}
}

// replayTrail applies the trail's upserts and deletes in order (files as
// TrailFiles orders them, oldest first) and returns each key's priority,
// and the lines that changed nothing. A partial line, left by a kill, is
// skipped.
func replayTrail(t *testing.T, files []string) (state map[string]uint32, unchanged []string) {
	t.Helper()
	state = map[string]uint32{}
	for _, f := range files {
		fh, err := os.Open(f)
		if errors.Is(err, os.ErrNotExist) {
			continue // not written yet
		}
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var l struct {
				Seq     uint64
				Op, Key string
				Value   struct{ Prio uint32 }
			}
			if json.Unmarshal(sc.Bytes(), &l) != nil {
				continue
			}
			prev, held := state[l.Key]
			switch l.Op {
			case "upsert":
				if held && prev == l.Value.Prio {
					unchanged = append(unchanged, fmt.Sprintf("line %d: upsert %s = %d", l.Seq, l.Key, prev))
				}
				state[l.Key] = l.Value.Prio
			case "delete":
				if !held {
					unchanged = append(unchanged, fmt.Sprintf("line %d: delete of %s, which the trail does not hold", l.Seq, l.Key))
				}
				delete(state, l.Key)
			}
		}
		fh.Close()
	}
	return state, unchanged
}

// TestAuditDeletesAcrossKill: deletes around a kill -9 reach the audit
// trail. One file is deleted and the process killed at once, before the
// trail can have taken the delete; another is deleted while the process
// is down. The restarted process's first reconcile must record both
// deletes, write no line for the unchanged keys, and leave a trail that
// verifies. A trail that keeps no state of what it recorded (append-only)
// never records them.
func TestAuditDeletesAcrossKill(t *testing.T) {
	bin, err := exec.LookPath("pipeline") // the test binary, installed by TestMain
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	trail, cfg := filepath.Join(dir, "trail.jsonl"), filepath.Join(dir, "p.hcl")
	writeConfig(t, cfg, fmt.Sprintf(`
source "files" "pods" {
  paths = [%q]
}
transform "extract" "r" {
  input = source.files.pods
  key   = "${object.metadata.namespace}/${object.metadata.name}"
  value = { prio = object.spec.priority }
}
sink "audit" "a" {
  input = transform.extract.r
  path  = %q
  fsync = "always"
}
`, filepath.Join(data, "*.yaml"), trail))
	model := map[string]uint32{}
	for i, name := range []string{"a", "b", "c", "d"} {
		body := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: ns\nspec:\n  priority: %d\n", name, i)
		if err := os.WriteFile(filepath.Join(data, name+".yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		model["ns/"+name] = uint32(i)
	}
	waitTrail := func(p *exec.Cmd) {
		t.Helper()
		files := []string{trail}
		deadline := time.Now().Add(time.Minute)
		for {
			if got, _ := replayTrail(t, files); cmp.Equal(got, model) {
				return
			}
			if time.Now().After(deadline) {
				got, _ := replayTrail(t, files)
				t.Fatalf("the trail does not reach the model in a minute (-model +trail):\n%s\nlogs:\n%s", cmp.Diff(model, got), tailOf(&robustLogs))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	p := startPipeline(t, bin, cfg)
	defer func() { p.Process.Kill(); p.Wait() }()
	waitTrail(p)
	before := len(trailLines(t, dir))

	if err := os.Remove(filepath.Join(data, "b.yaml")); err != nil { // its line may be lost in the kill
		t.Fatal(err)
	}
	delete(model, "ns/b")
	p.Process.Signal(syscall.SIGKILL)
	p.Wait()
	if err := os.Remove(filepath.Join(data, "c.yaml")); err != nil { // deleted while down
		t.Fatal(err)
	}
	delete(model, "ns/c")
	p = startPipeline(t, bin, cfg)
	waitTrail(p)
	p.Process.Signal(syscall.SIGTERM)
	p.Wait()
	checkTrail(t, trail, model)
	got := dataLines(trailLines(t, dir)[before:])
	slices.Sort(got) // one reconcile, or two when b's line made it before the kill
	if want := []string{"delete ns/b", "delete ns/c"}; !cmp.Equal(got, want) {
		t.Errorf("data lines after the kill: %q, want %q", got, want)
	}
}
