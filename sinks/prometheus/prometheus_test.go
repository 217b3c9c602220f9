package prometheus

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

const readyBody = `
input  = source.kubernetes.widgets
metric = "kube_customresource_ready"
help   = "Whether the object's Ready condition is True."
labels = {
  namespace = record.value.metadata.namespace
  name      = record.value.metadata.name
  condition = "Ready"
}
value = contains([for c in try(record.value.status.conditions, []) : c.status if c.type == "Ready"], "True")
`

func widget(ns, name, ready string) node.Record {
	conds := cty.ListValEmpty(cty.Object(map[string]cty.Type{"type": cty.String, "status": cty.String}))
	if ready != "" {
		conds = cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"type": cty.StringVal("Ready"), "status": cty.StringVal(ready)})})
	}
	return node.Record{Key: ns + "/" + name, Value: cty.ObjectVal(map[string]cty.Value{
		"metadata": cty.ObjectVal(map[string]cty.Value{"namespace": cty.StringVal(ns), "name": cty.StringVal(name)}),
		"status":   cty.ObjectVal(map[string]cty.Value{"conditions": conds}),
	})}
}

// open builds a sink from body and opens it on a fresh registry served
// as the engine serves a node's: every metric gets node=<address>.
func open(t *testing.T, body string) (*Target, *promclient.Registry, *nodetest.HealthRecorder) {
	t.Helper()
	s := nodetest.MustBuild(t, Spec(), body, &node.Upstream{Type: node.Objects}).Sink.(*Sink)
	reg := promclient.NewRegistry()
	env, h := nodetest.Env(t, nil)
	env.Metrics = promclient.WrapRegistererWith(promclient.Labels{"node": s.address}, reg)
	tg, err := s.Open(context.Background(), env, node.ModeRun)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tg.Close() })
	return tg.(*Target), reg, h
}

func prepare(t *testing.T, tg node.Target, recs ...node.Record) []node.Entry {
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

// scrape serves reg over HTTP as the admin endpoint does and returns the
// lines of the family name.
func scrape(t *testing.T, reg promclient.Gatherer, name string) []string {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s: %s", resp.Status, b)
	}
	var out []string
	for l := range strings.Lines(string(b)) {
		if strings.HasPrefix(l, name+"{") || strings.HasPrefix(l, name+" ") {
			out = append(out, strings.TrimSuffix(l, "\n"))
		}
	}
	return out
}

func TestTargetSuite(t *testing.T) {
	nodetest.RunTargetSuite(t, func(t *testing.T) node.Target {
		tg, _, _ := open(t, readyBody)
		return tg
	}, []node.Record{widget("a", "w1", "True"), widget("a", "w2", "False"), widget("b", "w1", "")})
}

func TestSeriesFollowRecords(t *testing.T) {
	tg, reg, _ := open(t, readyBody)
	ctx := context.Background()
	es := prepare(t, tg, widget("a", "w1", "True"), widget("a", "w2", "False"))
	if got := tg.Show(es[0]); got != `kube_customresource_ready{condition="Ready",name="w1",namespace="a"} 1` {
		t.Fatalf("Show = %s", got)
	}
	tg.Update(ctx, es)
	want := []string{
		`kube_customresource_ready{condition="Ready",name="w1",namespace="a",node="sink.prometheus.test"} 1`,
		`kube_customresource_ready{condition="Ready",name="w2",namespace="a",node="sink.prometheus.test"} 0`,
	}
	if diff := cmp.Diff(want, scrape(t, reg, "kube_customresource_ready")); diff != "" {
		t.Fatalf("scrape (-want +got):\n%s", diff)
	}
	// A changed record changes its series; a deleted one removes it.
	up := prepare(t, tg, widget("a", "w2", "True"))
	tg.Update(ctx, up)
	tg.Delete(ctx, es[:1])
	want = []string{`kube_customresource_ready{condition="Ready",name="w2",namespace="a",node="sink.prometheus.test"} 1`}
	if diff := cmp.Diff(want, scrape(t, reg, "kube_customresource_ready")); diff != "" {
		t.Fatalf("scrape after update and delete (-want +got):\n%s", diff)
	}
	// What the target holds is what Prepare makes: plan and the resync
	// find nothing to do.
	actual, _ := tg.Actual(ctx)
	if len(actual) != 1 || !actual[0].Same(up[0]) {
		t.Fatalf("Actual = %v, want %v", actual, up)
	}
}

func TestScrapeIsPromlintClean(t *testing.T) {
	tg, reg, _ := open(t, readyBody)
	tg.Update(context.Background(), prepare(t, tg, widget("a", "w1", "True")))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil || len(problems) > 0 {
		t.Fatalf("promlint: %v %v", problems, err)
	}
}

func TestRestartServesOnlyWhatRecordsSay(t *testing.T) {
	tg, reg, _ := open(t, readyBody)
	tg.Update(context.Background(), prepare(t, tg, widget("a", "w1", "True")))
	tg.Close()
	if got := scrape(t, reg, "kube_customresource_ready"); len(got) != 0 {
		t.Fatalf("closed target still served: %v", got)
	}
	tg2, _, _ := open(t, readyBody)
	if es, _ := tg2.Actual(context.Background()); len(es) != 0 {
		t.Fatalf("a new target holds %v", es)
	}
}

func TestValuesThatAreNotFiniteAreSkipped(t *testing.T) {
	body := `
input  = source.static.x
metric = "widget_temperature_celsius"
help   = "Temperature."
labels = { name = record.key }
value  = record.value
`
	tg, reg, _ := open(t, body)
	recs := []node.Record{
		{Key: "ok", Value: cty.NumberFloatVal(21.5)},
		{Key: "text", Value: cty.StringVal("warm")},
		{Key: "null", Value: cty.NullVal(cty.Number)},
		{Key: "inf", Value: cty.PositiveInfinity},
		{Key: "numeric-text", Value: cty.StringVal("3")},
		{Key: "yes", Value: cty.True},
	}
	es := prepare(t, tg, recs...)
	tg.Update(context.Background(), es)
	for _, e := range es {
		if e.Err != nil {
			t.Fatalf("%s: %v", e.Key, e.Err)
		}
	}
	want := []string{
		`widget_temperature_celsius{name="numeric-text",node="sink.prometheus.test"} 3`,
		`widget_temperature_celsius{name="ok",node="sink.prometheus.test"} 21.5`,
		`widget_temperature_celsius{name="yes",node="sink.prometheus.test"} 1`,
	}
	if diff := cmp.Diff(want, scrape(t, reg, "widget_temperature_celsius")); diff != "" {
		t.Fatalf("scrape (-want +got):\n%s", diff)
	}
	if got := tg.Show(es[3]); got != `skipped (value +Inf is not a finite number): widget_temperature_celsius{name="inf"} +Inf` {
		t.Fatalf("Show of a skipped record = %q", got)
	}
	if got := scrape(t, reg, "pipeline_sink_prometheus_skipped_total"); !slices.Equal(got, []string{`pipeline_sink_prometheus_skipped_total{node="sink.prometheus.test"} 3`}) {
		t.Fatalf("skipped counter: %v", got)
	}
	if got := tg.Explain("inf"); len(got) != 1 || !strings.HasPrefix(got[0], "not served: the value is not a finite number") {
		t.Fatalf("Explain of a skipped key: %q", got)
	}
	// A skipped key is held (explain shows it), and a finite value later
	// serves the series.
	tg.Update(context.Background(), prepare(t, tg, node.Record{Key: "inf", Value: cty.NumberIntVal(4)}))
	if got := scrape(t, reg, "widget_temperature_celsius"); len(got) != 4 {
		t.Fatalf("after the value became finite: %v", got)
	}
}

func TestMaxSeriesRefusesAndDegrades(t *testing.T) {
	tg, reg, h := open(t, readyBody+"max_series = 2\n")
	ctx := context.Background()
	es := prepare(t, tg, widget("a", "w1", "True"), widget("a", "w2", "True"), widget("a", "w3", "True"))
	tg.Update(ctx, es)
	if es[0].Err != nil || es[1].Err != nil || !errors.Is(es[2].Err, errMaxSeries) {
		t.Fatalf("errors: %v %v %v", es[0].Err, es[1].Err, es[2].Err)
	}
	if h.State() != node.Degraded || !strings.Contains(h.Detail, "max_series 2 reached: 1 series refused") {
		t.Fatalf("health %s %q", h.State(), h.Detail)
	}
	// A served series may change: it is not new.
	up := prepare(t, tg, widget("a", "w1", "False"))
	tg.Update(ctx, up)
	if up[0].Err != nil {
		t.Fatal(up[0].Err)
	}
	// Room made, the retry is served and the sink is healthy again.
	tg.Delete(ctx, es[1:2])
	retry := prepare(t, tg, widget("a", "w3", "True"))
	tg.Update(ctx, retry)
	if retry[0].Err != nil || h.State() != node.Healthy {
		t.Fatalf("retry: %v, health %s", retry[0].Err, h.State())
	}
	if got := scrape(t, reg, "kube_customresource_ready"); len(got) != 2 {
		t.Fatalf("served %v", got)
	}
}

func TestDuplicateSeriesRefused(t *testing.T) {
	body := `
input  = source.static.x
metric = "widget_up"
help   = "Up."
labels = { zone = record.value.zone }
value  = 1
`
	tg, reg, _ := open(t, body)
	zone := func(k, z string) node.Record {
		return node.Record{Key: k, Value: cty.ObjectVal(map[string]cty.Value{"zone": cty.StringVal(z)})}
	}
	es := prepare(t, tg, zone("a", "eu"), zone("b", "eu"))
	tg.Update(context.Background(), es)
	if es[0].Err != nil || es[1].Err == nil || !strings.Contains(es[1].Err.Error(), "another key, a, serves this series") {
		t.Fatalf("errors: %v, %v", es[0].Err, es[1].Err)
	}
	if got := scrape(t, reg, "widget_up"); len(got) != 1 {
		t.Fatalf("served %v", got)
	}
}

func TestSensitiveRecordRefused(t *testing.T) {
	body := `
input  = source.static.x
metric = "widget_up"
help   = "Up."
labels = { owner = record.value.owner }
value  = record.value.n
`
	tg, _, _ := open(t, body)
	sensitive := cty.StringVal("s3cret").Mark("sensitive")
	for _, v := range []cty.Value{
		cty.ObjectVal(map[string]cty.Value{"owner": sensitive, "n": cty.NumberIntVal(1)}),
		cty.ObjectVal(map[string]cty.Value{"owner": cty.StringVal("x"), "n": cty.NumberIntVal(1).Mark("sensitive")}),
	} {
		_, err := tg.Prepare(node.Record{Key: "k", Value: v})
		if err == nil || !strings.Contains(err.Error(), "sensitive") || strings.Contains(err.Error(), "s3cret") {
			t.Fatalf("Prepare of a sensitive record: %v", err)
		}
	}
}

func TestRenderIsTheScrape(t *testing.T) {
	tg, reg, _ := open(t, readyBody)
	es := prepare(t, tg, widget("a", "w2", "False"), widget("a", "w1", "True"))
	tg.Update(context.Background(), es)
	got, err := tg.s.Render(es)
	if err != nil {
		t.Fatal(err)
	}
	want := `# HELP kube_customresource_ready Whether the object's Ready condition is True.
# TYPE kube_customresource_ready gauge
kube_customresource_ready{condition="Ready",name="w1",namespace="a",node="sink.prometheus.test"} 1
kube_customresource_ready{condition="Ready",name="w2",namespace="a",node="sink.prometheus.test"} 0
`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Fatalf("Render (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(strings.Split(strings.TrimSpace(want), "\n")[2:], scrape(t, reg, "kube_customresource_ready")); diff != "" {
		t.Fatalf("scrape differs from Render (-render +scrape):\n%s", diff)
	}
}

func TestPlanModeServesNothing(t *testing.T) {
	s := nodetest.MustBuild(t, Spec(), readyBody, nil).Sink.(*Sink)
	reg := promclient.NewRegistry()
	env, _ := nodetest.Env(t, reg)
	tg, err := s.Open(context.Background(), env, node.ModePlan)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if mfs, _ := reg.Gather(); len(mfs) != 0 {
		t.Fatalf("plan mode registered %d families", len(mfs))
	}
	if es, _ := tg.Actual(context.Background()); len(es) != 0 {
		t.Fatalf("plan mode holds %v", es)
	}
}

func TestExplainSaysWhatIsServed(t *testing.T) {
	tg, _, _ := open(t, readyBody+"max_series = 1\n")
	es := prepare(t, tg, widget("a", "w1", "True"), widget("a", "w2", "True"))
	tg.Update(context.Background(), es)
	for k, want := range map[string]string{
		"a/w1": `served as kube_customresource_ready{condition="Ready",name="w1",namespace="a",node="sink.prometheus.test"} 1`,
		"a/w2": "not served: max_series 1 reached",
	} {
		if got := tg.Explain(k); len(got) != 1 || got[0] != want {
			t.Errorf("Explain(%s) = %q, want %q", k, got, want)
		}
	}
}
