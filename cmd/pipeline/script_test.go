package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary run as the `pipeline` command inside
// scripts (testscript re-executes it under that name).
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"pipeline": func() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) },
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
