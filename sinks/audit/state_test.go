package audit

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// TestLedgerAcrossRestart: a reopened trail reads back what each key holds,
// with include_values on and off, so the engine finds unchanged keys equal
// (no line) and changed or deleted ones different.
func TestLedgerAcrossRestart(t *testing.T) {
	for _, extra := range []string{"", "include_values = false"} {
		t.Run(extra, func(t *testing.T) {
			dir := t.TempDir()
			s := build(t, dir, extra)
			tg, _, _ := open(t, s)
			es := []node.Entry{prep(t, tg, 1), prep(t, tg, 2), prep(t, tg, 3)}
			tg.Update(context.Background(), es)
			tg.Delete(context.Background(), es[2:])
			if err := tg.Close(); err != nil {
				t.Fatal(err)
			}

			tg, _, _ = open(t, build(t, dir, extra))
			defer tg.Close()
			actual, err := tg.Actual(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]node.Entry{}
			for _, a := range actual {
				got[a.Key] = a
			}
			if len(got) != 2 {
				t.Fatalf("Actual after a restart: %v, want the 2 keys upserted and not deleted", got)
			}
			for _, e := range es[:2] {
				if a, ok := got[e.Key]; !ok || !a.Same(prep(t, tg, keyNum(e.Key))) {
					t.Errorf("%s: read back %v, want the digest of %v", e.Key, a, e.Value)
				}
			}
			changed, _ := tg.Prepare(node.Record{Key: es[0].Key, Value: cty.ObjectVal(map[string]cty.Value{"n": cty.NumberIntVal(99)})})
			if got[es[0].Key].Same(changed) {
				t.Errorf("a changed value compares equal to the trail's")
			}
		})
	}
}

func prep(t *testing.T, tg *target, i int) node.Entry {
	t.Helper()
	r := rec(i)
	e, err := tg.Prepare(node.Record{Key: r.Key, Value: r.Value})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func keyNum(k string) int {
	n := 0
	for _, c := range k[len("10.0.0."):] {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// TestDeleteAfterRestart: the delete of a key read back from the trail (the
// restarted process's first reconcile) carries the digest the trail holds
// for it, with include_values on and off, never the digest text as if it
// were the value (a replay of the trail read that line as garbage).
func TestDeleteAfterRestart(t *testing.T) {
	for _, extra := range []string{"", "include_values = false"} {
		t.Run(extra, func(t *testing.T) {
			dir := t.TempDir()
			tg, _, _ := open(t, build(t, dir, extra))
			tg.Update(context.Background(), []node.Entry{prep(t, tg, 1)})
			if err := tg.Close(); err != nil {
				t.Fatal(err)
			}
			tg, _, _ = open(t, build(t, dir, extra))
			actual, err := tg.Actual(context.Background())
			if err != nil || len(actual) != 1 {
				t.Fatalf("Actual: %v, %v", actual, err)
			}
			tg.Delete(context.Background(), actual)
			if err := tg.Close(); err != nil {
				t.Fatal(err)
			}
			lines := readLines(t, filepath.Join(dir, "trail.jsonl"))
			up, del := lines[1], lines[len(lines)-1]
			want := up["digest"]
			if want == nil {
				b, _ := json.Marshal(up["value"])
				want = digestText(sha256.Sum256(b))
			}
			if del["op"] != "delete" || del["digest"] != want || del["value"] != nil {
				t.Errorf("delete line %v, want the digest %v of the upsert %v", del, want, up)
			}
		})
	}
}
