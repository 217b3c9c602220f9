package haproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pipeline/pipeline/internal/backendtest"
	"github.com/pipeline/pipeline/internal/haproxytest"
)

// running is a real HAProxy in master-worker mode with its runtime socket.
type running struct {
	cfg    string // path of its file
	sock   string
	listen string
	master *exec.Cmd
}

// startHAProxy writes cfg (SOCK and LISTEN replaced) and runs HAProxy on it
// until the test ends.
func startHAProxy(t testing.TB, cfg string) *running {
	t.Helper()
	bin := haproxytest.Binary(t)
	dir := t.TempDir()
	r := &running{cfg: filepath.Join(dir, "haproxy.cfg"), sock: filepath.Join(dir, "admin.sock"), listen: freeAddr(t)}
	r.write(t, cfg)
	r.master = exec.Command(bin, "-W", "-f", r.cfg)
	log, err := os.Create(filepath.Join(dir, "haproxy.log"))
	if err != nil {
		t.Fatal(err)
	}
	r.master.Stdout, r.master.Stderr = log, log
	r.master.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.master.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.master.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = r.master.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = r.master.Process.Kill()
			<-done
		}
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("HAProxy logged:\n%s", b)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for len(r.workers(t)) != 1 || !r.answers() {
		if time.Now().After(deadline) {
			t.Fatal("HAProxy has no worker answering on its socket after 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return r
}

func (r *running) write(t testing.TB, cfg string) string {
	t.Helper()
	cfg = strings.NewReplacer("SOCK", r.sock, "LISTEN", r.listen).Replace(cfg)
	if err := os.WriteFile(r.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func (r *running) answers() bool {
	_, err := Client{Socket: r.sock}.Command(context.Background(), "show servers state")
	return err == nil
}

// workers returns the pids of the master's children.
func (r *running) workers(t testing.TB) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("list processes: %v", err)
	}
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so split after ')'.
		_, rest, _ := strings.Cut(string(b), ") ")
		if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(r.master.Process.Pid) {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// traffic sends requests through HAProxy one after another, each on a new
// connection, until stopped, and remembers the failures and the answers.
type traffic struct {
	sent, failed atomic.Int64
	mu           sync.Mutex
	answers      []string // since the last reset
	firstErr     error
	stop         func()
}

func startTraffic(t *testing.T, listen string) *traffic {
	tr := &traffic{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	tr.stop = func() { cancel(); <-done }
	t.Cleanup(tr.stop)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			a, err := get(ctx, c, listen)
			if ctx.Err() != nil {
				return
			}
			tr.sent.Add(1)
			tr.mu.Lock()
			if err != nil {
				tr.failed.Add(1)
				tr.firstErr = cmpErr(tr.firstErr, err)
			} else {
				tr.answers = append(tr.answers, a)
			}
			tr.mu.Unlock()
		}
	}()
	return tr
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func get(ctx context.Context, c *http.Client, listen string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+listen+"/", nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %s: %s", resp.Status, b)
	}
	return string(b), err
}

// settle waits until the last n answers are all in want, and forgets the
// answers.
func (tr *traffic) settle(t *testing.T, n int, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tr.mu.Lock()
		a := tr.answers
		ok := len(a) >= n && !slices.ContainsFunc(a[len(a)-n:], func(s string) bool { return !slices.Contains(want, s) })
		if ok {
			tr.answers = nil
		}
		tr.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("traffic does not settle on %v after 10s: last answers %v", want, a[max(0, len(a)-n):])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

const liveCfg = `global
  stats socket SOCK level admin
  hard-stop-after 10s
defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
  default-server maxconn 100 weight 3
frontend fe
  bind LISTEN
  default_backend be
backend be
  balance roundrobin
SERVERS
backend st
  balance source
  server x 127.0.0.1:1
`

// TestRuntimeUpdatesLive changes a real HAProxy's servers through the
// runtime API, with requests flowing all along: a server's port, a server
// added and another removed, a server disabled. Traffic follows each
// change, no request fails, and the worker is the same throughout; a
// reload of the last file then gives the same servers.
func TestRuntimeUpdatesLive(t *testing.T) {
	names := []string{"web-1", "web-2", "web-3", "web-4"}
	ports, stop, err := backendtest.Serve("127.0.0.1", names...)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cfgs := []struct {
		servers []string
		serves  []string
		ops     int
	}{
		{[]string{"  server s1 127.0.0.1:P1"}, []string{"web-1"}, 0},
		{[]string{"  server s1 127.0.0.1:P2"}, []string{"web-2"}, 1},
		{[]string{"  server s2 127.0.0.1:P3 weight 2 check inter 1s"}, []string{"web-3"}, 2},
		{[]string{"  server s2 127.0.0.1:P3 weight 2 check inter 1s disabled", "  server s3 127.0.0.1:P4", "  server s4 127.0.0.1:P1"}, []string{"web-4", "web-1"}, 3},
	}
	render := func(i int) string {
		s := strings.Replace(liveCfg, "SERVERS", strings.Join(cfgs[i].servers, "\n"), 1)
		for j, p := range ports {
			s = strings.ReplaceAll(s, fmt.Sprintf(":P%d", j+1), ":"+strconv.Itoa(p))
		}
		return s
	}
	r := startHAProxy(t, render(0))
	c := Client{Socket: r.sock, Timeout: 2 * time.Second}
	worker := r.workers(t)
	tr := startTraffic(t, r.listen)
	tr.settle(t, 20, cfgs[0].serves...)
	first, _ := os.ReadFile(r.cfg)
	prev := first
	for i := 1; i < len(cfgs); i++ {
		next := []byte(r.write(t, render(i)))
		u := Diff(prev, next)
		if u.Reload != "" || len(u.Ops) != cfgs[i].ops {
			t.Fatalf("step %d: %s, want %d ops", i, u.Describe(), cfgs[i].ops)
		}
		ctx := context.Background()
		if _, err := c.Check(ctx, Parse(prev), u.Ops); err != nil {
			t.Fatalf("step %d: HAProxy does not run the previous file: %v", i, err)
		}
		if err := c.Apply(ctx, u.Ops); err != nil {
			t.Fatalf("step %d: apply %s: %v", i, u.Describe(), err)
		}
		if err := c.Verify(ctx, Parse(next), u.Ops); err != nil {
			t.Fatalf("step %d: verify %s: %v", i, u.Describe(), err)
		}
		tr.settle(t, 20, cfgs[i].serves...)
		prev = next
	}
	if got := r.workers(t); !slices.Equal(got, worker) {
		t.Errorf("workers %v, want %v: the runtime updates reloaded HAProxy", got, worker)
	}
	// The file says what HAProxy holds: a reload agrees. The master now
	// and then misses a SIGUSR2 on a busy machine: it is sent again each
	// second until a new worker answers.
	deadline := time.Now().Add(20 * time.Second)
	for next := time.Now(); slices.Contains(r.workers(t), worker[0]) || !r.answers(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no new worker 20s after the reload")
		}
		if time.Now().After(next) {
			if err := r.master.Process.Signal(syscall.SIGUSR2); err != nil {
				t.Fatal(err)
			}
			next = time.Now().Add(time.Second)
		}
	}
	tr.settle(t, 20, cfgs[len(cfgs)-1].serves...)
	all := Diff(first, prev)
	if err := c.Verify(context.Background(), Parse(prev), all.Ops); err != nil {
		t.Errorf("after a reload of the last file: %v", err)
	}
	if _, err := c.Check(context.Background(), Parse(prev), all.Ops); err != nil {
		t.Errorf("after a reload of the last file: %v", err)
	}
	if _, err := c.Check(context.Background(), Parse(first), all.Ops); err == nil {
		t.Error("Check says HAProxy runs the first file")
	}
	tr.stop()
	if f := tr.failed.Load(); f > 0 {
		t.Errorf("%d of %d requests failed, the first: %v", f, tr.sent.Load(), tr.firstErr)
	}
}

// TestRuntimeRefusalsLive: what HAProxy refuses comes back as an error,
// and Verify sees a server that is not as the file says.
func TestRuntimeRefusalsLive(t *testing.T) {
	r := startHAProxy(t, strings.Replace(liveCfg, "SERVERS", "  server s1 127.0.0.1:1", 1))
	c := Client{Socket: r.sock}
	ctx := context.Background()
	err := c.Apply(ctx, []Op{{Action: AddServer, Backend: "st", Server: "y", Addr: ap("127.0.0.1:2")}})
	var ae *AnswerError
	if !errors.As(err, &ae) || !strings.Contains(ae.Answer, "dynamic load balancing") {
		t.Errorf("add to a static backend: %v", err)
	}
	for _, op := range []Op{{Action: SetWeight, Backend: "be", Server: "nope", Weight: 1}, {Action: SetWeight, Backend: "st", Server: "x", Weight: 5}} {
		if err := c.Apply(ctx, []Op{op}); !errors.As(err, &ae) {
			t.Errorf("%s: %v, want HAProxy's refusal", op, err)
		}
	}
	other, _ := os.ReadFile(r.cfg)
	other = []byte(strings.Replace(string(other), "127.0.0.1:1\n", "127.0.0.1:7 weight 3\n", 1))
	if err := c.Verify(ctx, Parse(other), []Op{{Action: SetAddr, Backend: "be", Server: "s1"}}); err == nil || !strings.Contains(err.Error(), "HAProxy has 127.0.0.1:1, the file 127.0.0.1:7") {
		t.Errorf("Verify = %v, want the port mismatch", err)
	}
}

// TestRemovedWithConnectionsLive: a server removed while a request is
// under way stays in maintenance (HAProxy refuses to delete it), the
// request completes, and a later Check hands back the op that deletes it.
func TestRemovedWithConnectionsLive(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	slow := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		entered <- struct{}{}
		<-release
		_, _ = io.WriteString(w, "slow")
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = slow.Serve(l) }()
	defer slow.Close()
	ports, stop, err := backendtest.Serve("127.0.0.1", "web")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	withServers := func(lines string) string {
		return strings.Replace(strings.Replace(liveCfg, "balance roundrobin", "balance roundrobin\n  http-reuse never", 1), "SERVERS", lines, 1)
	}
	r := startHAProxy(t, withServers("  server s1 "+l.Addr().String()))
	c := Client{Socket: r.sock}
	ctx := context.Background()
	answer := make(chan string, 1)
	go func() {
		a, err := get(ctx, &http.Client{Timeout: 10 * time.Second}, r.listen)
		if err != nil {
			a = err.Error()
		}
		answer <- a
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the request did not reach the slow server")
	}
	old, _ := os.ReadFile(r.cfg)
	next := []byte(r.write(t, withServers(fmt.Sprintf("  server s2 127.0.0.1:%d", ports[0]))))
	u := Diff(old, next)
	if err := c.Apply(ctx, u.Ops); err != nil {
		t.Fatalf("apply %s: %v", u.Describe(), err)
	}
	if err := c.Verify(ctx, Parse(next), u.Ops); err != nil {
		t.Fatalf("verify %s: %v", u.Describe(), err)
	}
	left, err := c.Check(ctx, Parse(next), u.Ops)
	if err != nil || len(left) != 1 || left[0].Server != "s1" {
		t.Fatalf("Check = %v, %v; want s1 left in maintenance", left, err)
	}
	close(release)
	if a := <-answer; a != "slow" {
		t.Fatalf("the request under way got %q", a)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(left) > 0 {
		if err := c.Apply(ctx, left); err != nil {
			t.Fatal(err)
		}
		if left, err = c.Check(ctx, Parse(next), u.Ops); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("s1 is not deleted 10s after its last request ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	held, err := c.Servers(ctx)
	if err != nil || len(held) != 2 || held[0].Name != "s2" {
		t.Errorf("HAProxy holds %+v, %v; want be/s2 and st/x", held, err)
	}
}
