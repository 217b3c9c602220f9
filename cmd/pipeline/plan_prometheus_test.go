package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// widgetsConfig is a static source of widgets (KEY = ready) and a
// prometheus sink serving each widget's readiness.
func widgetsConfig(ready map[string]bool) string {
	var recs []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range ready {
			if !yield(k) {
				return
			}
		}
	}) {
		ns, name, _ := strings.Cut(k, "/")
		recs = append(recs, fmt.Sprintf("    %q = { ns = %q, name = %q, ready = %t }", k, ns, name, ready[k]))
	}
	return `
source "static" "widgets" {
  records = {
` + strings.Join(recs, "\n") + `
  }
}
sink "prometheus" "ready" {
  input  = source.static.widgets
  metric = "widget_ready"
  help   = "Whether the widget is ready."
  labels = { namespace = record.value.ns, name = record.value.name }
  value  = record.value.ready
}
`
}

// servedWidgets returns the widget_ready series addr's /metrics serves.
func servedWidgets(t *testing.T, w *watched) []string {
	t.Helper()
	var out []string
	for l := range strings.Lines(get(t, w.client, "http://"+w.addr+"/metrics")) {
		if strings.HasPrefix(l, "widget_ready{") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	slices.Sort(out)
	return out
}

func widgetSeries(name string, v int) string {
	return fmt.Sprintf(`widget_ready{name=%q,namespace="shop",node="sink.prometheus.ready"} %d`, name, v)
}

// TestPlanAgainstPrometheusSeries: plan --against compares a prometheus
// sink's records with the series the running instance serves on its
// /metrics: an unchanged series is counted held, a changed value is `~`,
// a series no record wants any more is `-`, a new one `+`; the reload
// then serves exactly that, explain agrees, and a plan after it shows no
// change. Without --against, plan says it cannot know what is served.
func TestPlanAgainstPrometheusSeries(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.hcl")
	writeConfig(t, cfg, widgetsConfig(map[string]bool{"shop/a": true, "shop/b": true, "shop/c": true}))
	w := runWatched(t, cfg)
	eventually(t, "the instance serves the three series", func() bool {
		return slices.Equal(servedWidgets(t, w), []string{widgetSeries("a", 1), widgetSeries("b", 1), widgetSeries("c", 1)})
	})

	newCfg := widgetsConfig(map[string]bool{"shop/a": true, "shop/b": false, "shop/d": true})
	planned := filepath.Join(t.TempDir(), "new.hcl")
	writeConfig(t, planned, newCfg)

	out, code := planCLI("plan", "--against", w.addr, planned)
	if code != 2 {
		t.Fatalf("plan exited %d, want 2:\n%s", code, out)
	}
	for _, want := range []string{
		"sink.prometheus.ready  (gauge widget_ready on /metrics of http://" + w.addr + "/metrics, prometheus_series, 3 / 10000 entries)\n",
		`~ shop/b => widget_ready{name="b",namespace="shop"} 0 (was widget_ready{name="b",namespace="shop"} 1) from source.static.widgets shop/b`,
		`+ shop/d => widget_ready{name="d",namespace="shop"} 1 from source.static.widgets shop/d`,
		`- widget_ready{name="c",namespace="shop"} no longer desired (was widget_ready{name="c",namespace="shop"} 1)`,
		"Plan: 1 to add, 1 to change, 1 to remove.",
	} {
		if !slices.Contains(fieldLines(out), strings.Join(strings.Fields(want), " ")) && !strings.Contains(out, want) {
			t.Errorf("plan --against lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "shop/a") || strings.Contains(out, "note:") {
		t.Errorf("plan --against shows the unchanged series or a note:\n%s", out)
	}

	jsonOut, code := planCLI("plan", "--json", "--against", w.addr, planned)
	if code != 2 {
		t.Fatalf("plan --json exited %d:\n%s", code, jsonOut)
	}
	var doc struct {
		FormatVersion string `json:"format_version"`
		Sinks         []struct {
			Target struct {
				Location string `json:"location"`
				Note     string `json:"note"`
			} `json:"target"`
			Held    int `json:"held"`
			Changes []struct {
				Action string `json:"action"`
				Key    string `json:"key"`
				Shown  struct{ Before, After string }
			} `json:"changes"`
		} `json:"sinks"`
	}
	if err := json.Unmarshal([]byte(jsonOut), &doc); err != nil {
		t.Fatalf("%v\n%s", err, jsonOut)
	}
	var got []string
	for _, c := range doc.Sinks[0].Changes {
		got = append(got, c.Action+" "+c.Key+": "+c.Shown.Before+" => "+c.Shown.After)
	}
	want := []string{
		`update shop/b: widget_ready{name="b",namespace="shop"} 1 => widget_ready{name="b",namespace="shop"} 0`,
		`create shop/d:  => widget_ready{name="d",namespace="shop"} 1`,
		`delete widget_ready{name="c",namespace="shop"}: widget_ready{name="c",namespace="shop"} 1 => `,
	}
	if diff := cmp.Diff(want, got); diff != "" || doc.FormatVersion != "1.5" || doc.Sinks[0].Held != 3 || doc.Sinks[0].Target.Note != "" {
		t.Errorf("plan --json (-want +got):\n%s\n%s", diff, jsonOut)
	}

	// explain reads at each key what the plan compared with: the served
	// series of shop/b, and the one of shop/c, which the plan removes.
	for k, series := range map[string]string{"shop/b": `widget_ready{name=\"b\",namespace=\"shop\"} 1`, "shop/c": `widget_ready{name=\"c\",namespace=\"shop\"} 1`} {
		ex := get(t, w.client, "http://"+w.addr+"/explain?key="+url.QueryEscape(k))
		if !strings.Contains(ex, `"actual":"`+series+`"`) {
			t.Errorf("explain %s before the reload: %s", k, ex)
		}
	}

	// Without a running instance, plan says what it does not know.
	out, code = planCLI("plan", planned)
	if code != 2 || !strings.Contains(out, "    note: series of the running instance unknown (give its admin address with plan --against ADDR): every series shown as an add\n") ||
		!strings.Contains(out, "Plan: 3 to add, 0 to change, 0 to remove.") {
		t.Errorf("plan without --against exited %d:\n%s", code, out)
	}

	// The reload serves exactly what the plan said.
	saveFile(t, cfg, newCfg)
	if recs := w.settle(t, 1); recs[0].Result != "applied" {
		t.Fatalf("reload %s: %s", recs[0].Result, recs[0].Error)
	}
	wantServed := []string{widgetSeries("a", 1), widgetSeries("b", 0), widgetSeries("d", 1)}
	eventually(t, "the instance serves the planned series", func() bool { return slices.Equal(servedWidgets(t, w), wantServed) })
	ex := get(t, w.client, "http://"+w.addr+"/explain?key="+url.QueryEscape("shop/b"))
	if !strings.Contains(ex, `"status":"applied"`) || !strings.Contains(ex, `"actual":"widget_ready{name=\"b\",namespace=\"shop\"} 0"`) {
		t.Errorf("explain shop/b: %s", ex)
	}
	out, code = planCLI("plan", "--against", w.addr, planned)
	if code != 0 || !strings.Contains(out, "3 / 10000 entries") || !strings.Contains(out, "no changes") {
		t.Errorf("plan after the reload exited %d, want 0 and no changes:\n%s", code, out)
	}
}

// fieldLines returns out's lines with runs of spaces made one.
func fieldLines(out string) []string {
	var ls []string
	for l := range strings.Lines(out) {
		ls = append(ls, strings.Join(strings.Fields(l), " "))
	}
	return ls
}
