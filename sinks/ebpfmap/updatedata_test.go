package ebpfmap

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// TestUpdateData writes prepared entries by their Data alone
// (node.Chunked) into maps of each shape the fill handles (word-sized
// key and value, other sizes, per-CPU, array), with and without batch
// calls, and checks that the map then holds exactly what Update of the
// same entries writes, and that DeleteData deletes by the keys alone;
// Data of another width, a full map and a map open for plan are refused
// entry by entry.
func TestUpdateData(t *testing.T) {
	dir := requireBPF(t)
	for _, tc := range []struct{ name, mapType, key, value string }{
		{"words", "hash", `type = "ipv4"`, "type = \"u32\"\nfrom = 7"},
		{"bytes", "hash", `type = "ip"`, "type = \"u16\"\nfrom = 7"},
		{"percpu", "percpu_hash", `type = "ipv4"`, "type = \"u64\"\nfrom = 7"},
		{"array", "array", "type = \"u32\"\nfrom = tonumber(split(\".\", record.key)[3])", "type = \"u32\"\nfrom = 7"},
	} {
		for _, batch := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s batch=%v", tc.name, batch), func(t *testing.T) {
				body := func(pin string) string {
					return fmt.Sprintf("pin = %q\ntype = %q\nmax_entries = 64\nkey {\n%s\n}\nvalue {\n%s\n}", pin, tc.mapType, tc.key, tc.value)
				}
				byData, _ := open(t, body(fmt.Sprintf("%s/%s-%v-data", dir, tc.name, batch)))
				byEntry, _ := open(t, body(fmt.Sprintf("%s/%s-%v-entry", dir, tc.name, batch)))
				byData.batch, byEntry.batch = batch, batch
				var es []node.Entry
				var data []byte
				for i := range 10 {
					e, err := byData.Prepare(rec(fmt.Sprint("10.0.0.", i+1), cty.EmptyObjectVal))
					if err != nil {
						t.Fatal(err)
					}
					es, data = append(es, e), append(data, e.Data...)
				}
				width := len(es[0].Data)
				errs := make([]error, len(es))
				byData.UpdateData(context.Background(), data, width, errs)
				for i, err := range errs {
					if err != nil {
						t.Fatalf("entry %d: %v", i, err)
					}
				}
				byEntry.Update(context.Background(), es)
				got, _ := byData.Actual(context.Background())
				want, _ := byEntry.Actual(context.Background())
				if len(got) != len(es) {
					t.Fatalf("the map holds %d entries, want %d", len(got), len(es))
				}
				if d := cmp.Diff(show(want), show(got)); d != "" {
					t.Fatalf("UpdateData and Update wrote different maps (-Update +UpdateData):\n%s", d)
				}
				checkScan(t, byData) // and a full read knows them by their Data
				for _, e := range es {
					if v := byData.ValueOf(e.Data); !v.RawEquals(e.Value) {
						t.Fatalf("ValueOf(%x) = %#v, Prepare gave %#v", e.Data, v, e.Value)
					}
				}
				byData.UpdateData(context.Background(), data[:width*2+2], width+1, errs[:2])
				if errs[0] == nil || errs[1] == nil || !strings.Contains(errs[0].Error(), "not prepared by this target") {
					t.Fatalf("Data of another width: %v", errs[:2])
				}
				// DeleteData reads only the keys: the first five entries by
				// their Data, the next two by their Data with a byte more
				// each (as a delete of an entry read back whole is cut).
				byData.DeleteData(context.Background(), data[:5*width], width, errs[:5])
				var longer []byte
				for _, e := range es[5:7] {
					longer = append(append(longer, e.Data...), 0xff)
				}
				byData.DeleteData(context.Background(), longer, width+1, errs[5:7])
				for i, err := range errs[:7] {
					if err != nil {
						t.Fatalf("delete %d: %v", i, err)
					}
				}
				if got, _ := byData.Actual(context.Background()); len(got) != 3 {
					t.Fatalf("after DeleteData of 7 of 10 entries the map holds %d", len(got))
				}
			})
		}
	}
}

// show is entries as key=value text, sorted, for comparing maps.
func show(es []node.Entry) map[string]string {
	out := map[string]string{}
	for _, e := range es {
		out[e.Key] = fmt.Sprintf("%#v %x", e.Value, e.Data)
	}
	return out
}

// TestUpdateDataRefusals: a full map fails the entries past its capacity
// (the others stay) and reports itself degraded; a map open for plan
// writes nothing.
func TestUpdateDataRefusals(t *testing.T) {
	dir := requireBPF(t)
	tg, h := open(t, fmt.Sprintf("pin = %q\nmax_entries = 4\nkey { type = \"ipv4\" }\nvalue {\n type = \"u8\"\n from = 1\n}", dir+"/full"))
	var data []byte
	for i := range 6 {
		e, err := tg.Prepare(rec(fmt.Sprint("10.0.0.", i+1), cty.EmptyObjectVal))
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, e.Data...)
	}
	errs := make([]error, 6)
	tg.UpdateData(context.Background(), data, 5, errs)
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
			if !isFull(err) || !strings.Contains(err.Error(), "is full (max_entries 4)") {
				t.Fatalf("error does not say the map is full: %v", err)
			}
		}
	}
	if got, _ := tg.Actual(context.Background()); failed != 2 || len(got) != 4 {
		t.Fatalf("%d entries failed and %d stayed; want 2 and 4", failed, len(got))
	}
	if h.State() != node.Degraded {
		t.Fatalf("health %v, want degraded", h.State())
	}
	tg.plan = true
	tg.UpdateData(context.Background(), data[:5], 5, errs[:1])
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "plan mode") {
		t.Fatalf("a map open for plan took a write: %v", errs[0])
	}
}
