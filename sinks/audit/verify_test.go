package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tamperLines rewrites the lines of a file (without newlines) with f.
func tamperLines(t testing.TB, path string, f func(lines [][]byte) [][]byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	lines = f(lines)
	out := append(bytes.Join(lines, []byte("\n")), '\n')
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

type found struct {
	File string
	Line int
	Kind ProblemKind
}

func verifyDir(t testing.TB, dir string) *Problem {
	t.Helper()
	rep, err := Verify(trailFiles(t, dir), filepath.Join(dir, "trail.jsonl.checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	return rep.Problem
}

// TestVerifyNamesTampering writes a trail of 21 lines (the open line, then
// rec(0) to rec(19) as lines 2 to 21), tampers with it and checks that
// verify names the right line and kind.
func TestVerifyNamesTampering(t *testing.T) {
	active := "trail.jsonl"
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, path string)
		want   found
	}{
		{"edit a value", func(t *testing.T, p string) {
			tamperLines(t, p, func(ls [][]byte) [][]byte {
				ls[6] = bytes.Replace(ls[6], []byte(`"n":5}`), []byte(`"n":6}`), 1)
				return ls
			})
		}, found{active, 7, Edited}},
		{"insert a copy of an earlier line", func(t *testing.T, p string) {
			tamperLines(t, p, func(ls [][]byte) [][]byte {
				return append(ls[:9:9], append([][]byte{ls[3]}, ls[9:]...)...)
			})
		}, found{active, 10, Inserted}},
		{"insert a forged line", func(t *testing.T, p string) {
			tamperLines(t, p, func(ls [][]byte) [][]byte {
				forged := bytes.Replace(ls[9], []byte(`"n":8}`), []byte(`"n":99}`), 1)
				return append(ls[:9:9], append([][]byte{forged}, ls[9:]...)...)
			})
		}, found{active, 10, Inserted}},
		{"delete a line", func(t *testing.T, p string) {
			tamperLines(t, p, func(ls [][]byte) [][]byte { return append(ls[:7:7], ls[8:]...) })
		}, found{active, 8, Removed}},
		{"swap two lines", func(t *testing.T, p string) {
			tamperLines(t, p, func(ls [][]byte) [][]byte { ls[11], ls[12] = ls[12], ls[11]; return ls })
		}, found{active, 12, Reordered}},
		{"truncate mid-line", func(t *testing.T, p string) {
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-30], 0o600)
		}, found{active, 21, Truncated}},
		{"cut the tail", func(t *testing.T, p string) {
			tamperLines(t, p, func(ls [][]byte) [][]byte { return ls[:18] })
		}, found{active, 19, Truncated}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTrail(t, build(t, dir, ""), 20)
			mustVerify(t, dir)
			tc.tamper(t, filepath.Join(dir, active))
			p := verifyDir(t, dir)
			if p == nil {
				t.Fatal("verify passed a tampered trail")
			}
			got := found{filepath.Base(p.File), p.Line, p.Kind}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("problem %s (-want +got):\n%s", p, d)
			}
		})
	}
}

func TestVerifyNamesMissingFiles(t *testing.T) {
	for _, tc := range []struct {
		name, remove string
		want         found
	}{
		{"delete a middle file", "trail.jsonl.2", found{"trail.jsonl.3", 1, Removed}},
		{"delete the oldest file without a retention line", "trail.jsonl.1", found{"trail.jsonl.2", 1, Removed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTrail(t, build(t, dir, `max_size = "2KiB"`+"\nmax_files = 0"), 100)
			mustVerify(t, dir)
			if err := os.Remove(filepath.Join(dir, tc.remove)); err != nil {
				t.Fatal(err)
			}
			p := verifyDir(t, dir)
			if p == nil {
				t.Fatal("verify passed a trail with a file deleted")
			}
			if d := cmp.Diff(tc.want, found{filepath.Base(p.File), p.Line, p.Kind}); d != "" {
				t.Errorf("problem %s (-want +got):\n%s", p, d)
			}
		})
	}
}

func TestParseJSONPath(t *testing.T) {
	for _, bad := range []string{"value.x", "$.key", "$.value", "$.value[", "$.value[x]", "$.value..x", "$[0].x"} {
		if _, err := parseJSONPath(bad); err == nil {
			t.Errorf("parseJSONPath(%q) accepted", bad)
		}
	}
	v := map[string]any{"a": []any{map[string]any{"b": 1, "c": 2}, map[string]any{"b": 3}}, "d": map[string]any{"e f": 1}}
	for _, p := range []string{"$.value.a[*].b", "$.value['d']['e f']"} {
		jp, err := parseJSONPath(p)
		if err != nil {
			t.Fatal(err)
		}
		remove(v, jp.steps)
	}
	want := map[string]any{"a": []any{map[string]any{"c": 2}, map[string]any{}}, "d": map[string]any{}}
	if d := cmp.Diff(want, v); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
