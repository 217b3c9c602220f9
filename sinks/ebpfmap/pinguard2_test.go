package ebpfmap

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// One map pinned at two paths is one map: a second pipeline writing it
// through the other pin is refused, as through the same pin.
func TestSecondWriterThroughAnotherPin(t *testing.T) {
	dir := requireBPF(t)
	first, _ := open(t, pinBody(dir+"/one"))
	if err := first.m.Pin(dir + "/one"); err != nil {
		t.Fatal(err)
	}
	alias, err := ebpf.LoadPinnedMap(dir+"/one", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer alias.Close()
	if err := alias.Pin(dir + "/two"); err != nil {
		t.Fatal(err)
	}
	s := nodetest.MustBuild(t, Spec(), "input = transform.extract.ips\n"+pinBody(dir+"/two"), records).Sink.(*Sink)
	env, _ := nodetest.Env(t, nil)
	second, err := s.Open(context.Background(), env, node.ModeRun)
	if err == nil {
		second.Close()
		t.Fatal("a second writer of the same map through another pin was accepted")
	}
	if !strings.Contains(err.Error(), "another pipeline") || !strings.Contains(err.Error(), "map ID") {
		t.Fatalf("second writer: %v", err)
	}
	first.Close()
	second, err = s.Open(context.Background(), env, node.ModeRun)
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	second.Close()
}

// A pin swapped for a map of another key size is not adopted, and the
// target refuses writes (which would go to its old, unpinned map) until
// the pin names a map it can write again.
func TestPinSwappedForAnotherShape(t *testing.T) {
	dir := requireBPF(t)
	pin := dir + "/swapped"
	tg, _ := open(t, pinBody(pin))
	put(t, tg, rec("10.0.0.1", cty.EmptyObjectVal))
	if _, err := tg.Actual(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(pin); err != nil {
		t.Fatal(err)
	}
	spec := tg.s.spec.Copy()
	spec.KeySize = 8
	other, err := ebpf.NewMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Pin(pin); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.Actual(context.Background()); err == nil || !strings.Contains(err.Error(), "differs") {
		t.Fatalf("read after the swap: %v", err)
	}
	es := put(t, tg, rec("10.0.0.2", cty.EmptyObjectVal))
	if es[0].Err == nil {
		t.Fatal("a write after the pin was swapped for another map's succeeded (into the old, unpinned map)")
	}
	var v uint8
	if err := tg.m.Lookup([]byte{10, 0, 0, 2}, &v); err == nil {
		t.Fatal("the old map was written")
	}
	// The pin is put back as declared: writes go there.
	if err := os.Remove(pin); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.Actual(context.Background()); err != nil {
		t.Fatalf("read after the pin was removed: %v", err)
	}
	if es := put(t, tg, rec("10.0.0.2", cty.EmptyObjectVal)); es[0].Err != nil {
		t.Fatalf("write after the pin was restored: %v", es[0].Err)
	}
}
