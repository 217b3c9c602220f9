package ebpfmap

import (
	"context"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/xdptest"
)

// TestXDPEnforcement proves the map the Target writes is the map a kernel
// program enforces: an XDP allow-list on B's veth end passes A's ping once
// the Target wrote A's address, and drops it again after the Target
// deleted it. Run for a hash map keyed by ipv4 and an LPM trie keyed by
// ipv4_prefix.
func TestXDPEnforcement(t *testing.T) {
	dir := requireBPF(t)
	xdptest.Require(t)
	for i, tc := range []struct {
		name, mapType, keyType string
		lpm                    bool
	}{
		{"hash", "hash", "ipv4", false},
		{"lpm", "lpm_trie", "ipv4_prefix", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pin := fmt.Sprintf("%s/xdp%d", dir, i)
			tg, _ := open(t, fmt.Sprintf("pin = %q\ntype = %q\nmax_entries = 64\nkey { type = %q }\nvalue {\n type = \"u8\"\n from = 1\n}", pin, tc.mapType, tc.keyType))
			pair, err := xdptest.NewPair(203 + i)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := pair.Close(); err != nil {
					t.Error(err)
				}
			})
			m, err := ebpf.LoadPinnedMap(pin, nil) // as the program's loader would
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			prog, err := xdptest.AllowList(m, tc.lpm)
			if err != nil {
				t.Fatal(err)
			}
			defer prog.Close()
			if err := pair.AttachToB(prog); err != nil {
				t.Fatal(err)
			}
			if pair.Ping() {
				t.Fatal("ping A->B passes with an empty allow-list")
			}
			es := put(t, tg, node.Record{Key: pair.AddrA.String(), Value: cty.EmptyObjectVal})
			if es[0].Err != nil {
				t.Fatal(es[0].Err)
			}
			if !pair.Ping() {
				t.Fatalf("ping A->B fails after the Target wrote %s", es[0].Key)
			}
			tg.Delete(context.Background(), es)
			if es[0].Err != nil {
				t.Fatal(es[0].Err)
			}
			if pair.Ping() {
				t.Fatalf("ping A->B passes after the Target deleted %s", es[0].Key)
			}
		})
	}
}
