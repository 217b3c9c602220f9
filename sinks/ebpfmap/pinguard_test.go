package ebpfmap

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

func pinBody(pin string) string {
	return fmt.Sprintf("pin = %q\nmax_entries = 16\nkey {\n type = \"ipv4\"\n}\n%s", pin, u8Value)
}

// A second writer on one pin is refused with a clear error while the
// first holds it, and accepted once the first closes.
func TestSecondWriterRefused(t *testing.T) {
	dir := requireBPF(t)
	pin := dir + "/shared"
	first, _ := open(t, pinBody(pin))
	s := nodetest.MustBuild(t, Spec(), "input = transform.extract.ips\n"+pinBody(pin), records).Sink.(*Sink)
	env, _ := nodetest.Env(t, nil)
	_, err := s.Open(context.Background(), env, node.ModeRun)
	if err == nil || !strings.Contains(err.Error(), "another pipeline") || !strings.Contains(err.Error(), pin) {
		t.Fatalf("second writer: %v", err)
	}
	if _, err := s.Open(context.Background(), env, node.ModePlan); err != nil {
		t.Fatalf("plan takes no lock: %v", err)
	}
	first.Close()
	second, err := s.Open(context.Background(), env, node.ModeRun)
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	second.Close()
}

// A pin deleted by hand is pinned again at the next full read, entries
// kept; a pin that now names another map is adopted, so the reconcile
// writes where programs look. Each is found after full reads that found
// the pin unchanged (checked by its file alone).
func TestPinDeletedOrReplaced(t *testing.T) {
	dir := requireBPF(t)
	pin := dir + "/guarded"
	tg, _ := open(t, pinBody(pin))
	put(t, tg, rec("10.0.0.1", cty.EmptyObjectVal), rec("10.0.0.2", cty.EmptyObjectVal))
	for range 2 {
		if got, err := tg.Actual(context.Background()); err != nil || len(got) != 2 {
			t.Fatalf("pin unchanged: %d entries, %v", len(got), err)
		}
	}
	if err := os.Remove(pin); err != nil {
		t.Fatal(err)
	}
	got, err := tg.Actual(context.Background())
	if err != nil || len(got) != 2 {
		t.Fatalf("after the pin was deleted: %d entries, %v", len(got), err)
	}
	pinned, err := ebpf.LoadPinnedMap(pin, nil)
	if err != nil {
		t.Fatalf("not pinned again: %v", err)
	}
	if a, b := idOf(t, pinned), idOf(t, tg.m); a != b {
		t.Fatalf("pin names map %d, target holds %d", a, b)
	}
	pinned.Close()
	if got, err := tg.Actual(context.Background()); err != nil || len(got) != 2 {
		t.Fatalf("pinned again, unchanged since: %d entries, %v", len(got), err)
	}

	// Someone else recreates the map at the pin.
	if err := os.Remove(pin); err != nil {
		t.Fatal(err)
	}
	other, err := ebpf.NewMap(tg.s.spec)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Pin(pin); err != nil {
		t.Fatal(err)
	}
	got, err = tg.Actual(context.Background())
	if err != nil || len(got) != 0 {
		t.Fatalf("after the pin was replaced: %d entries, %v (want the new, empty map)", len(got), err)
	}
	if a, b := idOf(t, other), idOf(t, tg.m); a != b {
		t.Fatalf("target holds map %d, not the one now pinned (%d)", b, a)
	}
	put(t, tg, rec("10.0.0.3", cty.EmptyObjectVal))
	var v uint8
	if err := other.Lookup([]byte{10, 0, 0, 3}, &v); err != nil {
		t.Fatalf("write did not reach the map now pinned: %v", err)
	}
}

func idOf(t *testing.T, m *ebpf.Map) ebpf.MapID {
	t.Helper()
	id, err := mapID(m)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A pin naming an existing directory says so, not "needs root".
func TestPinIsDirectory(t *testing.T) {
	dir := requireBPF(t)
	if err := os.MkdirAll(dir+"/maps", 0o755); err != nil {
		t.Fatal(err)
	}
	s := nodetest.MustBuild(t, Spec(), "input = transform.extract.ips\n"+pinBody(dir+"/maps"), records).Sink.(*Sink)
	env, _ := nodetest.Env(t, nil)
	_, err := s.Open(context.Background(), env, node.ModeRun)
	if err == nil || !strings.Contains(err.Error(), "is a directory") || strings.Contains(err.Error(), "root") {
		t.Fatalf("got %v", err)
	}
}
