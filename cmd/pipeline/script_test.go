package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// peakLine starts the last line pipeline-peak writes.
const peakLine = "peak-rss-kib "

// ownPeakKiB is this process's peak RSS since it started (VmHWM), in KiB,
// or -1 when /proc does not say.
func ownPeakKiB() int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for line := range bytes.Lines(status) {
		if v, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			n, err := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(v), []byte(" kB"))), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// TestMain lets the test binary run as the `pipeline` command inside
// scripts (testscript re-executes it under that name).
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"pipeline": func() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) },
		// pipeline-peak is pipeline that ends its output with its own peak
		// RSS (see peakLine): the rusage of a child counts the peak of the
		// test process that started it.
		"pipeline-peak": func() {
			code := run(os.Args[1:], os.Stdout, os.Stderr)
			fmt.Fprintf(os.Stderr, "\n%s%d\n", peakLine, ownPeakKiB())
			os.Exit(code)
		},
	})
}

// TestScripts runs the CLI scripts of testdata/script: exit codes, stdout
// and stderr of validate, fmt, graph, schema and version. With -update, the
// files a failing cmp compares against are rewritten inside the scripts.
//
// Besides testscript's commands, scripts have:
//
//	exits CODE pipeline ARGS...   run a command and require its exit code
//	jsonvalid FILE                 require FILE (or stdout) to hold one JSON value
//	[ci]                           true when the CI environment variable is set
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *update,
		RequireExplicitExec: false,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":     cmdExits,
			"jsonvalid": cmdJSONValid,
		},
		Condition: func(cond string) (bool, error) {
			if cond == "ci" {
				return os.Getenv("CI") != "", nil
			}
			return false, errors.New("unknown condition")
		},
	})
}

func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE COMMAND [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad code %q", args[0])
	}
	got := 0
	var ee *exec.ExitError
	if err := ts.Exec(args[1], args[2:]...); errors.As(err, &ee) {
		got = ee.ExitCode()
	} else if err != nil {
		ts.Fatalf("exits: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

func cmdJSONValid(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: jsonvalid FILE")
	}
	var v any
	err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &v)
	switch {
	case neg && err == nil:
		ts.Fatalf("%s holds valid JSON", args[0])
	case !neg && err != nil:
		ts.Fatalf("%s: %v", args[0], err)
	}
}
