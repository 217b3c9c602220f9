// Package haproxytest finds the HAProxy the tests that run a real one
// need.
package haproxytest

import (
	"os"
	"os/exec"
	"testing"
)

// Binary returns the path of the haproxy executable on PATH. Without one
// the test fails under CI (scripts/setup.sh installs it there) and is
// skipped elsewhere.
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no haproxy in CI (scripts/setup.sh installs it): %v", err)
		}
		t.Skipf("no haproxy: %v (apt-get install haproxy)", err)
	}
	return bin
}
