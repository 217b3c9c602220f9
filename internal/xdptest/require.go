package xdptest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// tools are the commands a Pair runs, with the Debian package of each.
var tools = []struct{ cmd, pkg string }{
	{"ip", "iproute2"},
	{"ping", "iputils-ping"},
}

// Missing names what a Pair needs and this machine lacks, each with how to
// get it: root, and the ip and ping commands. It returns "" when nothing
// is missing.
func Missing() string {
	var miss []string
	if os.Geteuid() != 0 {
		miss = append(miss, "root (CAP_BPF, CAP_NET_ADMIN): run the tests as root")
	}
	for _, t := range tools {
		if _, err := exec.LookPath(t.cmd); err != nil {
			miss = append(miss, fmt.Sprintf("the %s command: apt-get install %s (make test installs it as root)", t.cmd, t.pkg))
		}
	}
	return strings.Join(miss, "; ")
}

// lookTools fails naming the first command of a Pair that is not on PATH.
func lookTools() error {
	for _, t := range tools {
		if _, err := exec.LookPath(t.cmd); err != nil {
			return fmt.Errorf("the %s command is missing (%w): install the %s package", t.cmd, err, t.pkg)
		}
	}
	return nil
}

// Require skips t when a prerequisite of a Pair is missing, naming it and
// how to get it. Under CI (the CI environment variable set), which runs as
// root with everything installed, a missing prerequisite fails t instead.
func Require(t testing.TB) {
	t.Helper()
	miss := Missing()
	if miss == "" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("XDP test cannot run in CI: missing %s", miss)
	}
	t.Skipf("skipping XDP test: missing %s", miss)
}
