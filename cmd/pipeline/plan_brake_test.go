package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/cmd/pipeline/admin"
	"github.com/pipeline/pipeline/cmd/pipeline/inspect"
	"github.com/pipeline/pipeline/cmd/pipeline/planview"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/plan"
	"github.com/pipeline/pipeline/engine/reconcile"
)

// TestPlanShowsHeldDeletes: a delete the deletion brake would hold is
// marked in the text view and in --json, with the reason.
func TestPlanShowsHeldDeletes(t *testing.T) {
	const why = "2 deletes would be held by the deletion brake: more than max_deletes = 1 allows (1 of the 2 entries in the target)"
	del := func(k string) plan.PlannedChange {
		return plan.PlannedChange{Braked: true, Change: reconcile.Change{Address: "sink.mem.m", Action: reconcile.Delete, Key: k,
			Old: node.Entry{Key: k, Value: cty.StringVal("v")}}}
	}
	p := &planview.Plan{PlanResult: plan.PlanResult{Sinks: []plan.SinkPlan{{Address: "sink.mem.m", Type: "mem", Prune: true,
		Actual: 2, DeletesBraked: 2, Brake: why, Changes: []plan.PlannedChange{del("a"), del("b")}}},
		Warnings: []plan.PlanWarning{{Address: "sink.mem.m", Message: why}}}}
	var text bytes.Buffer
	if err := (planview.Text{Max: 10}).Write(&text, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "- a  no longer desired, held by the deletion brake (was ") || !strings.Contains(text.String(), why) {
		t.Errorf("text view:\n%s", text.String())
	}
	var js bytes.Buffer
	if err := (planview.JSON{}).Write(&js, p); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Sinks []struct {
			DeletesHeld int    `json:"deletes_held"`
			Brake       string `json:"brake"`
			Changes     []struct {
				Held bool `json:"held"`
			} `json:"changes"`
		} `json:"sinks"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if s := doc.Sinks[0]; s.DeletesHeld != 2 || s.Brake != why || len(s.Changes) != 2 || !s.Changes[0].Held || !s.Changes[1].Held {
		t.Errorf("json: %s", js.String())
	}
}

// TestExplainShowsBrake: explain's text view gives the reason the brake
// holds a key's delete.
func TestExplainShowsBrake(t *testing.T) {
	const why = "300 deletes held by the deletion brake: more than max_deletes = 50% allows (150 of the 300 entries in the target)"
	var out bytes.Buffer
	inspect.WriteExplain(&out, admin.Explanation{Key: "k7", Entries: []admin.Entry{{Sink: "sink.mem.m", InputKey: "k7", TargetKey: "k7",
		Status: "held by the deletion brake", InTarget: true, Brake: why}}}, time.Now())
	if !strings.Contains(out.String(), "sink.mem.m  k7  held by the deletion brake\n") || !strings.Contains(out.String(), "  brake    "+why+"\n") {
		t.Errorf("explain:\n%s", out.String())
	}
}
