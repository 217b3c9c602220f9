// Package kit is what the benchmark's contender programs share: a
// clientset from a kubeconfig and the pinned map they fill. It imports
// only client-go, cilium/ebpf and the standard library.
package kit

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/cilium/ebpf"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Flags are the flags every contender takes.
type Flags struct {
	Kubeconfig string
	Namespace  string
	Selector   string
	Pin        string
	MaxEntries int
	JSON       bool
}

// Parse reads the flags from the command line; the benchtable program
// passes the same ones to every contender.
func Parse() Flags {
	var f Flags
	flag.StringVar(&f.Kubeconfig, "kubeconfig", "", "kubeconfig of the API server")
	flag.StringVar(&f.Namespace, "namespace", "bench", "namespace of the pods")
	flag.StringVar(&f.Selector, "selector", "app=bench", "label selector of the pods")
	flag.StringVar(&f.Pin, "pin", "", "bpffs path of the map")
	flag.IntVar(&f.MaxEntries, "max-entries", 65536, "max_entries of the map it creates")
	flag.BoolVar(&f.JSON, "json", false, "talk JSON to the API server instead of protobuf")
	flag.Parse()
	return f
}

// Main runs fn until SIGTERM or SIGINT and exits non-zero on its error.
func Main(name string, fn func(ctx context.Context) error) {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := fn(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// Clientset builds a client with no client-side rate limit, speaking
// protobuf unless json is set.
func Clientset(kubeconfig string, json bool) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS = -1
	if !json {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	return kubernetes.NewForConfig(cfg)
}

// CreatePinned creates a hash map of IPv4 keys and u32 values and pins it.
func CreatePinned(pin string, maxEntries int) (*ebpf.Map, error) {
	if err := os.MkdirAll(filepath.Dir(pin), 0o755); err != nil {
		return nil, err
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: uint32(maxEntries)})
	if err != nil {
		return nil, fmt.Errorf("create map: %w", err)
	}
	if err := m.Pin(pin); err != nil {
		m.Close()
		return nil, fmt.Errorf("pin map: %w", err)
	}
	return m, nil
}
