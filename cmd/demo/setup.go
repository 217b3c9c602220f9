package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
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
	// ebpf is true as root: the job programs a pinned map at pin. Otherwise
	// a log sink appends the allow-list's changes to allowedLog.
	ebpf       bool
	pin        string
	allowedLog string
	audit      string // the audit trail's path
	agentLog   string // what the agent (examples/demo-agent) logs
	natsStore  string // the hub's embedded NATS server's storage
	agent      *exec.Cmd
	agentDone  chan struct{}
	bin        string
	pipeline   *exec.Cmd
	exited     chan struct{}
	metricsURL string
}

// entry is one allowed IP and its value as the target holds it.
type entry struct{ key, value string }

func setup(ctx context.Context) (*demo, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	d := &demo{dir: filepath.Join(wd, ".cache", "demo"), pin: "/sys/fs/bpf/pipeline-demo/allowed",
		bin: filepath.Join(wd, "bin", "pipeline"), ebpf: os.Geteuid() == 0}
	d.allowedLog = filepath.Join(d.dir, "allowed.jsonl")
	d.audit = filepath.Join(d.dir, "audit.jsonl")
	d.agentLog = filepath.Join(d.dir, "agent.jsonl")
	d.natsStore = filepath.Join(d.dir, "nats")
	if _, err := os.Stat(d.bin); err != nil {
		return nil, fmt.Errorf("%s missing: run `make build` (make demo does)", d.bin)
	}
	if d.ebpf {
		if err := ensureBPFFS(); err != nil {
			return nil, err
		}
		_ = os.Remove(d.pin) // a fresh map for a fresh cluster
	} else {
		say("not root: creating BPF maps needs root (CAP_BPF), so this run has no eBPF sink")
		fmt.Println("    a log sink takes the map's place (examples/demo-unprivileged); sudo make demo shows the real map")
	}
	_ = os.RemoveAll(d.dir)
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return nil, err
	}
	say("starting a real kube-apiserver %s + etcd, built from Go modules (.cache/kube), data in .cache/demo", kubeapitest.Version)
	start := time.Now()
	srv, err := kubeapitest.Start(ctx, kubeapitest.Options{Dir: filepath.Join(d.dir, "apiserver")})
	if err != nil {
		return nil, err
	}
	d.srv = srv
	fmt.Printf("    API server ready at %s in %s\n", srv.URL, time.Since(start).Round(time.Millisecond))
	d.kubeconfig = filepath.Join(d.dir, "kubeconfig")
	if err := srv.WriteKubeconfig(d.kubeconfig, "demo"); err != nil {
		d.teardown(false)
		return nil, err
	}
	d.cs = kubernetes.NewForConfigOrDie(srv.RESTConfig())
	return d, nil
}

func ensureBPFFS() error {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/bpf", &st); err == nil && st.Type == unix.BPF_FS_MAGIC {
		return nil
	}
	say("mounting a bpffs at /sys/fs/bpf (mount -t bpf bpf /sys/fs/bpf)")
	if err := os.MkdirAll("/sys/fs/bpf", 0o755); err != nil {
		return err
	}
	if err := unix.Mount("bpf", "/sys/fs/bpf", "bpf", 0, ""); err != nil {
		return fmt.Errorf("mount -t bpf bpf /sys/fs/bpf: %w", err)
	}
	return nil
}

// startPipelineProcess runs bin/pipeline on examples/demo, or on
// examples/demo-unprivileged without root.
func (d *demo) startPipelineProcess(logLevel string) error {
	config, err := d.configArgs()
	if err != nil {
		return err
	}
	args := append([]string{"run", "--listen", demoListen, "--log-level", logLevel}, config...)
	fmt.Printf("    $ pipeline %s\n", strings.Join(args, " "))
	cmd := exec.Command(d.bin, args...)
	cmd.Stdout, cmd.Stderr = prefixWriter("    | "), prefixWriter("    | ")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	d.pipeline, d.exited, d.metricsURL = cmd, make(chan struct{}), "http://"+demoListen
	go func() { _ = cmd.Wait(); close(d.exited) }()
	return nil
}

// configArgs are the variables and the configuration of the demo's job.
// configArgs are the variables and the configuration of the demo's runs
// (and its plan): a copy of the example, which the live edit step changes.
func (d *demo) configArgs() ([]string, error) {
	args := []string{"-var", "kubeconfig=" + d.kubeconfig, "-var", "grace=5s", "-var", "audit=" + d.audit,
		"-var", "nats_listen=" + demoNATS, "-var", "nats_store=" + d.natsStore}
	example := "examples/demo-unprivileged"
	if d.ebpf {
		example = "examples/demo"
		args = append(args, "-var", "pin="+d.pin)
	} else {
		args = append(args, "-var", "allowed_log="+d.allowedLog)
	}
	config, err := d.configPath(example)
	if err != nil {
		return nil, err
	}
	return append(args, config), nil
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

// The demo's addresses (flags -listen, -agent-listen, -nats; make demo
// passes DEMO_LISTEN, DEMO_AGENT_LISTEN, DEMO_NATS): the job's admin
// endpoint, the agent's, and the hub's embedded NATS server.
var (
	demoListen  = "127.0.0.1:19464"
	agentListen = "127.0.0.1:19465"
	demoNATS    = "127.0.0.1:14222"
)

// startAgent runs bin/pipeline on examples/demo-agent.
func (d *demo) startAgent() error {
	args := []string{"run", "--listen", agentListen, "--log-level", "warn",
		"-var", "nats_url=nats://" + demoNATS, "-var", "agent_log=" + d.agentLog, "examples/demo-agent"}
	fmt.Printf("    $ pipeline %s\n", strings.Join(args, " "))
	cmd := exec.Command(d.bin, args...)
	cmd.Stdout, cmd.Stderr = prefixWriter("    agent| "), prefixWriter("    agent| ")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	d.agent, d.agentDone = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(d.agentDone) }()
	return nil
}

func (d *demo) stopAgent() {
	if d.agent == nil {
		return
	}
	_ = d.agent.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.agentDone:
	case <-time.After(10 * time.Second):
		_ = d.agent.Process.Kill()
		<-d.agentDone
	}
	d.agent = nil
}

// teardown stops what the demo started and, unless keep, removes what it
// created: the API server's data, keys and tokens, and the pinned map.
func (d *demo) teardown(keep bool) {
	d.stopAgent()
	d.stopPipeline()
	if d.srv != nil {
		d.srv.Stop()
	}
	leftovers := []string{d.dir}
	if d.ebpf {
		leftovers = append(leftovers, filepath.Dir(d.pin))
	}
	if keep {
		say("kept %s; remove them with make clean", strings.Join(leftovers, " and "))
		return
	}
	say("cleaning up: API server stopped; removing %s (etcd data, TLS keys, tokens, kubeconfig)", rel(d.dir))
	for _, p := range leftovers {
		if err := os.RemoveAll(p); err != nil {
			fmt.Printf("    could not remove %s: %v (make clean removes it)\n", p, err)
		}
	}
	if d.ebpf {
		fmt.Printf("    unpinned %s\n", d.pin)
	}
}

func rel(p string) string {
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(wd, p); err == nil {
			return r
		}
	}
	return p
}

// allowed reads the allow-list: the pinned map's entries (an IPv4 key and
// a u32 value in host order), or the log sink's changes replayed.
func (d *demo) allowed() ([]entry, error) {
	if !d.ebpf {
		return replayLog(d.allowedLog)
	}
	m, err := ebpf.LoadPinnedMap(d.pin, &ebpf.LoadPinOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer m.Close()
	var out []entry
	var k [4]byte
	var v uint32
	it := m.Iterate()
	for it.Next(&k, &v) {
		out = append(out, entry{fmt.Sprintf("%d.%d.%d.%d", k[0], k[1], k[2], k[3]), fmt.Sprint(v)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out, it.Err()
}

// replayLog applies a log sink's JSON lines (op upsert or delete) in order.
func replayLog(path string) ([]entry, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	state := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct {
			Op    string          `json:"op"`
			Key   string          `json:"key"`
			Value json.RawMessage `json:"value"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue // a line still being written
		}
		if l.Op == "delete" {
			delete(state, l.Key)
		} else {
			state[l.Key] = string(l.Value)
		}
	}
	out := make([]entry, 0, len(state))
	for k, v := range state {
		out = append(out, entry{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out, sc.Err()
}
