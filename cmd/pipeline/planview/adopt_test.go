package planview

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/plan"
	"github.com/pipeline/pipeline/engine/reconcile"
)

// TestPlanShowsAdoption: a creation run would refuse (an object that
// exists and is not the sink's) is shown as refused, not as an add that
// would fail; one it would adopt says so; --json carries both.
func TestPlanShowsAdoption(t *testing.T) {
	const refused = "ConfigMap shop/hand exists and is not owned by pipeline.io/owner=x; set adopt = true to take it over"
	const adopts = "ConfigMap shop/old exists and is not owned by pipeline.io/owner=x"
	add := func(k string) plan.PlannedChange {
		return plan.PlannedChange{Change: reconcile.Change{Address: "sink.kubernetes.k", Action: reconcile.Create, Key: k,
			New: node.Entry{Key: k, Value: cty.StringVal("v")}}}
	}
	hand, old := add("shop/hand"), add("shop/old")
	hand.Refused, old.Adopts = refused, adopts
	p := &Plan{PlanResult: plan.PlanResult{Sinks: []plan.SinkPlan{{Address: "sink.kubernetes.k", Type: "kubernetes", Prune: true,
		Changes: []plan.PlannedChange{hand, old}}}}}
	var text bytes.Buffer
	if err := (Text{Max: 10}).Write(&text, p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"! shop/hand  refused: " + refused + "\n", "+ shop/old   => \"v\"\n      adopts it: " + adopts + "\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text view lacks %q:\n%s", want, text.String())
		}
	}
	if strings.Contains(text.String(), "would fail") {
		t.Errorf("text view shows a refusal as a failure:\n%s", text.String())
	}
	var js bytes.Buffer
	if err := (JSON{}).Write(&js, p); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version string `json:"format_version"`
		Sinks   []struct {
			Changes []struct {
				Refused string `json:"refused"`
				Adopts  string `json:"adopts"`
			} `json:"changes"`
		} `json:"sinks"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if c := doc.Sinks[0].Changes; doc.Version != "1.5" || c[0].Refused != refused || c[1].Adopts != adopts || c[0].Adopts != "" || c[1].Refused != "" {
		t.Errorf("json: %s", js.String())
	}
}
