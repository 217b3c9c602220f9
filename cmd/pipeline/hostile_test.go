package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The hostile corpus (testdata/hostile) holds configurations written to
// crash or exhaust pipeline: deep nesting, billion-laughs locals, special
// files, terminal escapes. Each case says, in comments, the commands to run
// with their exit codes and the diagnostic summary they must print:
//
//	# run: validate -json -> 1
//	# summary: Configuration nested too deeply
//
// and may generate its bulk with @@repeat N TEXT@@ (TEXT is Go-unquoted,
// so \x1b is an escape character). Each command runs as its own process,
// which must finish within hostileTimeout and stay under hostileMaxRSS:
// bounds that catch a hang or runaway memory, not a performance goal.
const (
	hostileTimeout = 2 * time.Minute
	hostileMaxRSS  = 768 << 20
)

var (
	runLineRE = regexp.MustCompile(`(?m)^# run: (.+) -> (\d+)$`)
	summaryRE = regexp.MustCompile(`(?m)^# summary: (.+)$`)
	repeatRE  = regexp.MustCompile(`@@repeat (\d+) (.*?)@@`)
)

func TestHostileCorpus(t *testing.T) {
	bin, err := exec.LookPath("pipeline-peak") // the test binary, installed by TestMain
	if err != nil {
		t.Fatal(err)
	}
	cases, err := filepath.Glob(filepath.Join("testdata", "hostile", "*.hcl"))
	if err != nil || len(cases) == 0 {
		t.Fatalf("no hostile cases: %v", err)
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(filepath.Base(c), ".hcl"), func(t *testing.T) {
			tmpl, err := os.ReadFile(c)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), filepath.Base(c))
			if err := os.WriteFile(path, expandRepeats(t, tmpl), 0o644); err != nil {
				t.Fatal(err)
			}
			summary := summaryRE.FindSubmatch(tmpl)
			runs := runLineRE.FindAllSubmatch(tmpl, -1)
			if summary == nil || len(runs) == 0 {
				t.Fatal("a hostile case needs # run: and # summary: lines")
			}
			for _, r := range runs {
				want, _ := strconv.Atoi(string(r[2]))
				runHostile(t, bin, append(strings.Fields(string(r[1])), path), want, string(summary[1]))
			}
		})
	}
}

func expandRepeats(t *testing.T, src []byte) []byte {
	t.Helper()
	var err error
	out := repeatRE.ReplaceAllFunc(src, func(m []byte) []byte {
		sub := repeatRE.FindSubmatch(m)
		n, _ := strconv.Atoi(string(sub[1]))
		text, e := strconv.Unquote(`"` + strings.ReplaceAll(string(sub[2]), `"`, `\"`) + `"`)
		if e != nil {
			err = e
		}
		return bytes.Repeat([]byte(text), n)
	})
	if err != nil {
		t.Fatalf("@@repeat text: %v", err)
	}
	return out
}

func runHostile(t *testing.T, bin string, args []string, wantCode int, summary string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hostileTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=2")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	name := strings.Join(args[:len(args)-1], " ")
	if ctx.Err() != nil {
		t.Fatalf("%s: still running after %s", name, hostileTimeout)
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	text, peak, found := strings.Cut(out.String(), "\n"+peakLine)
	peakKiB, err := strconv.ParseInt(strings.TrimSpace(peak), 10, 64)
	if !found || err != nil || peakKiB < 0 {
		t.Fatalf("%s: no peak RSS at the end of the output:\n%.2000s", name, out.String())
	}
	if code != wantCode {
		t.Errorf("%s: exit %d, want %d\n%.2000s", name, code, wantCode, text)
	}
	if !strings.Contains(text, summary) {
		t.Errorf("%s: output lacks %q:\n%.2000s", name, summary, text)
	}
	if strings.ContainsAny(text, "\x1b\x07") {
		t.Errorf("%s: raw terminal control characters in the output", name)
	}
	if peakKiB<<10 > hostileMaxRSS {
		t.Errorf("%s: peak RSS %d MiB, over %d MiB", name, peakKiB>>10, hostileMaxRSS>>20)
	}
	t.Logf("%s: exit %d in %s, peak RSS %d MiB", name, code, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime(), peakKiB>>10)
}
