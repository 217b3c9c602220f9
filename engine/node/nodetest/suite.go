package nodetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/pipeline/pipeline/engine/node"
)

// RunTargetSuite checks the node.Target contract on a fresh target from
// open, with records the target can encode (at least three):
// Prepare is deterministic, Update is idempotent, Actual reflects writes,
// deleting a missing key succeeds, and an append-only target says so with
// node.ErrNoActualState. Every sink type runs it in its tests. It covers
// each shape (node.Shape): a document's writes are committed (Commit, the
// input synced) before Actual reads them, and its PlanFile then sees no
// change.
func RunTargetSuite(t *testing.T, open func(t *testing.T) node.Target, records []node.Record) {
	t.Helper()
	if len(records) < 3 {
		t.Fatal("RunTargetSuite needs at least three records")
	}
	ctx := context.Background()
	prepare := func(t *testing.T, tg node.Target, recs []node.Record) []node.Entry {
		t.Helper()
		out := make([]node.Entry, len(recs))
		for i, r := range recs {
			e, err := tg.Prepare(r)
			if err != nil {
				t.Fatalf("Prepare(%s): %v", r.Key, err)
			}
			out[i] = e
		}
		return out
	}
	noErr := func(t *testing.T, op string, es []node.Entry) {
		t.Helper()
		for _, e := range es {
			if e.Err != nil {
				t.Fatalf("%s %s: %v", op, e.Key, e.Err)
			}
		}
	}
	// commit ends a round of a document; want are the entries it should
	// then hold, for its PlanFile.
	commit := func(t *testing.T, tg node.Target, want []node.Entry) {
		t.Helper()
		d, ok := tg.(node.Document)
		if !ok {
			return
		}
		noErr(t, "Commit", d.Commit(ctx, node.Round{Synced: true, Full: true}))
		fp, err := d.PlanFile(ctx, want)
		if err != nil || fp.Changed {
			t.Fatalf("PlanFile after Commit: %+v, %v; want no change", fp, err)
		}
	}
	t.Run("prepare is deterministic", func(t *testing.T) {
		tg := open(t)
		defer tg.Close()
		a, b := prepare(t, tg, records), prepare(t, tg, records)
		for i := range a {
			if a[i].Key != b[i].Key || !a[i].Value.RawEquals(b[i].Value) {
				t.Fatalf("Prepare(%s) gave %s then %s", records[i].Key, a[i].Key, b[i].Key)
			}
		}
	})
	t.Run("update is idempotent and actual reflects it", func(t *testing.T) {
		tg := open(t)
		defer tg.Close()
		es := prepare(t, tg, records)
		tg.Update(ctx, es)
		noErr(t, "Update", es)
		es2 := prepare(t, tg, records)
		tg.Update(ctx, es2)
		noErr(t, "second Update", es2)
		commit(t, tg, es)
		actual, err := tg.Actual(ctx)
		if errors.Is(err, node.ErrNoActualState) {
			return // append-only: nothing to read back
		}
		if err != nil {
			t.Fatal(err)
		}
		if got, want := keys(actual), keys(es); !slices.Equal(got, want) {
			t.Fatalf("Actual keys %v, want %v", got, want)
		}
		for _, a := range actual {
			for _, e := range es {
				if a.Key == e.Key && !a.Same(e) { // by Data when the target encodes
					t.Fatalf("Actual %s = %#v, wrote %#v", a.Key, a.Value, e.Value)
				}
			}
		}
	})
	t.Run("deleting a missing key succeeds", func(t *testing.T) {
		tg := open(t)
		defer tg.Close()
		es := prepare(t, tg, records)
		tg.Update(ctx, es[:1])
		noErr(t, "Update", es[:1])
		commit(t, tg, es[:1])
		tg.Delete(ctx, es) // es[1:] were never written
		noErr(t, "Delete", es)
		commit(t, tg, nil)
		actual, err := tg.Actual(ctx)
		if errors.Is(err, node.ErrNoActualState) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(actual) != 0 {
			t.Fatalf("after deleting everything Actual holds %v", keys(actual))
		}
	})
}

func keys(es []node.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Key
	}
	slices.Sort(out)
	return out
}
