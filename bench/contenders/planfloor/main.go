// Command planfloor is the least a plan of the map must do: one LIST of
// the pods (protobuf, from the watch cache) and one full read of the map
// with BatchLookup, comparing each pod's IP with the map; then it exits.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeline/pipeline/bench/contenders/kit"
)

func main() {
	f := kit.Parse()
	kit.Main("planfloor", func(ctx context.Context) error { return run(ctx, f) })
}

func run(ctx context.Context, f kit.Flags) error {
	cs, err := kit.Clientset(f.Kubeconfig, f.JSON)
	if err != nil {
		return err
	}
	l, err := cs.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: f.Selector, ResourceVersion: "0"})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	m, err := ebpf.LoadPinnedMap(f.Pin, &ebpf.LoadPinOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer m.Close()
	held := map[[4]byte]uint32{}
	keys, vals := make([][4]byte, 4096), make([]uint32, 4096)
	var cursor ebpf.MapBatchCursor
	for {
		c, err := m.BatchLookup(&cursor, keys, vals, nil)
		for i := range c {
			held[keys[i]] = vals[i]
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			break
		}
		if err != nil {
			return fmt.Errorf("batch lookup: %w", err)
		}
	}
	missing := 0
	for i := range l.Items {
		if a, err := netip.ParseAddr(l.Items[i].Status.PodIP); err == nil && a.Is4() {
			if held[a.As4()] != 1 {
				missing++
			}
		}
	}
	fmt.Printf("%d pods, %d entries, %d missing\n", len(l.Items), len(held), missing)
	return nil
}
