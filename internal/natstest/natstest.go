package natstest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is a running nats-server with JetStream on 127.0.0.1.
type Server struct {
	t     testing.TB
	Port  int
	Store string
	// one of these is set
	ns   *server.Server
	cmd  *exec.Cmd
	done chan struct{}
	bin  string
	// Name is the server name (cluster members); extra are the flags that
	// make it one.
	Name string
	// Monitor is the HTTP monitoring port (cluster members), 0 if none.
	Monitor int
	extra   []string
}

// URL is the server's client URL.
func (s *Server) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(s.Port) }

// Embedded starts an in-process server on a free port with its store in a
// temporary directory. The test's cleanup shuts it down.
func Embedded(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, Port: FreePort(t), Store: t.TempDir()}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

// External starts a nats-server child process (built from the module on
// first use) on a free port with its store in a temporary directory.
func External(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, Port: FreePort(t), Store: t.TempDir(), bin: Binary(t)}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start() {
	s.t.Helper()
	if s.bin == "" {
		ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: s.Port, JetStream: true,
			StoreDir: s.Store, NoLog: true, NoSigs: true})
		if err != nil {
			s.t.Fatalf("nats-server: %v", err)
		}
		ns.Start()
		if !ns.ReadyForConnections(10 * time.Second) {
			s.t.Fatal("embedded nats-server not ready")
		}
		s.ns = ns
		return
	}
	args := append([]string{"-a", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-js", "-sd", s.Store}, s.extra...)
	cmd := exec.Command(s.bin, args...)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start nats-server: %v", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(s.Port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.Stop()
			s.t.Fatalf("nats-server on port %d not ready: %v", s.Port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops the server: a shutdown of the embedded one, kill -9 of the
// process (no goodbye to clients, as a crash). Stopping twice is harmless.
func (s *Server) Stop() {
	if s.ns != nil {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
		s.ns = nil
	}
	if s.cmd != nil {
		_ = s.cmd.Process.Kill()
		<-s.done
		s.cmd = nil
	}
}

// Restart stops the server, waits for down, and starts it again on the same
// port and store directory.
func (s *Server) Restart(down time.Duration) {
	s.t.Helper()
	s.Stop()
	time.Sleep(down)
	s.start()
}

// FreePort returns a TCP port free on 127.0.0.1 at the time of the call.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

var build struct {
	once sync.Once
	path string
	err  error
}

// Binary returns the path of a nats-server executable of the version this
// module requires, building it into <repo>/.cache/nats/<version>/ when it is
// not there yet ($PIPELINE_NATS_SERVER overrides).
func Binary(t testing.TB) string {
	t.Helper()
	build.once.Do(func() { build.path, build.err = binary() })
	if build.err != nil {
		t.Fatalf("nats-server binary: %v", build.err)
	}
	return build.path
}

func binary() (string, error) {
	if p := os.Getenv("PIPELINE_NATS_SERVER"); p != "" {
		return p, nil
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	dir := filepath.Join(root, ".cache", "nats", strings.TrimPrefix(server.VERSION, "v"))
	bin := filepath.Join(dir, "nats-server")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Test binaries of several packages run at once: one builds, the
	// others wait for it.
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", dir, err)
	}
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	tmp := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid())
	cmd := exec.Command("go", "build", "-trimpath", "-o", tmp, "github.com/nats-io/nats-server/v2")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build nats-server: %w\n%s", err, out)
	}
	return bin, os.Rename(tmp, bin) // atomic: parallel test binaries may race to build
}
