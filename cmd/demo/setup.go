package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/kubernetes"

	"github.com/pipeline/pipeline/internal/kubeapitest"
)

type demo struct {
	dir        string
	srv        *kubeapitest.Server
	cs         kubernetes.Interface
	kubeconfig string
	pin        string
	bin        string
	pipeline   *exec.Cmd
	exited     chan struct{}
	metricsURL string
}

func setup(ctx context.Context) (*demo, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the demo programs a real eBPF map: run it as root (CAP_BPF), e.g. sudo make demo")
	}
	if err := ensureBPFFS(); err != nil {
		return nil, err
	}
	wd, _ := os.Getwd()
	d := &demo{dir: filepath.Join(wd, ".cache", "demo"), pin: "/sys/fs/bpf/pipeline-demo/allowed", bin: filepath.Join(wd, "bin", "pipeline")}
	if _, err := os.Stat(d.bin); err != nil {
		return nil, fmt.Errorf("%s missing: run `make build` (make demo does)", d.bin)
	}
	_ = os.RemoveAll(d.dir)
	_ = os.Remove(d.pin) // a fresh map for a fresh cluster
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return nil, err
	}
	say("starting a real kube-apiserver %s + etcd, built from Go modules (.cache/kube)", kubeapitest.Version)
	start := time.Now()
	srv, err := kubeapitest.Start(ctx, kubeapitest.Options{Dir: filepath.Join(d.dir, "apiserver")})
	if err != nil {
		return nil, err
	}
	d.srv = srv
	fmt.Printf("    API server ready at %s in %s\n", srv.URL, time.Since(start).Round(time.Millisecond))
	d.kubeconfig = filepath.Join(d.dir, "kubeconfig")
	if err := srv.WriteKubeconfig(d.kubeconfig, "demo"); err != nil {
		d.teardown()
		return nil, err
	}
	d.cs = kubernetes.NewForConfigOrDie(srv.RESTConfig())
	return d, nil
}

func ensureBPFFS() error {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/bpf", &st); err == nil && st.Type == 0xcafe4a11 {
		return nil
	}
	if err := os.MkdirAll("/sys/fs/bpf", 0o755); err != nil {
		return err
	}
	if err := unix.Mount("bpf", "/sys/fs/bpf", "bpf", 0, ""); err != nil {
		return fmt.Errorf("mount -t bpf bpf /sys/fs/bpf: %w", err)
	}
	return nil
}

// startPipelineProcess runs bin/pipeline on examples/demo.
func (d *demo) startPipelineProcess() error {
	args := []string{"run", "--listen", "127.0.0.1:19464", "--log-level", "warn",
		"-var", "kubeconfig=" + d.kubeconfig, "-var", "pin=" + d.pin, "-var", "grace=5s", "examples/demo"}
	fmt.Printf("    $ pipeline %s\n", strings.Join(args, " "))
	cmd := exec.Command(d.bin, args...)
	cmd.Stdout, cmd.Stderr = prefixWriter("    | "), prefixWriter("    | ")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	d.pipeline, d.exited, d.metricsURL = cmd, make(chan struct{}), "http://127.0.0.1:19464"
	go func() { _ = cmd.Wait(); close(d.exited) }()
	return nil
}

func (d *demo) stopPipeline() {
	if d.pipeline == nil {
		return
	}
	_ = d.pipeline.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(10 * time.Second):
		_ = d.pipeline.Process.Kill()
		<-d.exited
	}
	d.pipeline = nil
}

func (d *demo) teardown() {
	d.stopPipeline()
	if d.srv != nil {
		d.srv.Stop()
	}
}

// mapEntries reads the pinned map: IPv4 keys.
func (d *demo) mapEntries() ([]string, error) {
	m, err := ebpf.LoadPinnedMap(d.pin, &ebpf.LoadPinOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer m.Close()
	var out []string
	var k [4]byte
	var v uint32
	it := m.Iterate()
	for it.Next(&k, &v) {
		out = append(out, fmt.Sprintf("%d.%d.%d.%d", k[0], k[1], k[2], k[3]))
	}
	return sortIPs(out), it.Err()
}
