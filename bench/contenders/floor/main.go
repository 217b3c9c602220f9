// Command floor is the fastest a hand-written program can fill the map
// from the pods: one LIST served from the watch cache (resourceVersion 0),
// typed decoding, one BatchUpdate. It then stays until SIGTERM, so the
// benchmark reads its memory as it reads the others'. With -version it
// exits at once: the benchmark times that as the program's start-up.
package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeline/pipeline/bench/contenders/kit"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "-version" {
		fmt.Println("floor")
		return
	}
	f := kit.Parse()
	kit.Main("floor", func(ctx context.Context) error { return run(ctx, f) })
}

func run(ctx context.Context, f kit.Flags) error {
	m, err := kit.CreatePinned(f.Pin, f.MaxEntries)
	if err != nil {
		return err
	}
	defer m.Close()
	cs, err := kit.Clientset(f.Kubeconfig, f.JSON)
	if err != nil {
		return err
	}
	l, err := cs.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: f.Selector, ResourceVersion: "0"})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	keys := make([][4]byte, 0, len(l.Items))
	for i := range l.Items {
		if a, err := netip.ParseAddr(l.Items[i].Status.PodIP); err == nil && a.Is4() {
			keys = append(keys, a.As4())
		}
	}
	vals := make([]uint32, len(keys))
	for i := range vals {
		vals[i] = 1
	}
	if _, err := m.BatchUpdate(keys, vals, nil); err != nil {
		return fmt.Errorf("batch update: %w", err)
	}
	<-ctx.Done()
	return nil
}
