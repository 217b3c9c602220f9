package backendtest

import (
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestServeAnswersNames(t *testing.T) {
	ports, stop, err := Serve("127.0.0.1", "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for i, want := range []string{"a", "b"} {
		resp, err := http.Get("http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i])) + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != want {
			t.Errorf("port %d answered %q, want %q", ports[i], b, want)
		}
	}
}

func TestStopPidFile(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal("start sleep:", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	pid := filepath.Join(t.TempDir(), "pid")
	if err := os.WriteFile(pid, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	StopPidFile(pid)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the process named by the pid file still runs after StopPidFile")
	}
	StopPidFile(filepath.Join(t.TempDir(), "missing")) // nothing to stop, no panic
}
