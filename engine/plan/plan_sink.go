package plan

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/reconcile"
	"github.com/pipeline/pipeline/engine/sinkloop"
	"github.com/pipeline/pipeline/schema"
)

// planSink opens n's target read-only, prepares its input as the sink loop
// does and diffs it with what the target holds.
func planSink(ctx context.Context, r *engine.Runtime, n *graph.Node) (*SinkPlan, error) {
	env, input := r.TargetEnv(n), r.SinkInput(n)
	target, err := n.Sink.Open(ctx, env, node.ModePlan)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", n.Address, PhaseOpen, err)
	}
	defer func() {
		if err := target.Close(); err != nil {
			env.Logger.Warn("close target failed", "err", err)
		}
	}()
	sp := &SinkPlan{Address: n.Address, Type: n.Type, Prune: n.Prune, Target: node.TargetInfo{Location: n.Address, Exists: true}}
	desc, _ := target.(node.Describer)
	owners := make(map[node.Key][]sinkloop.Owned, len(input)) // by target key: the input keys mapping to it
	for _, rec := range input {
		e, err := target.Prepare(rec)
		if err != nil {
			sp.Skipped = append(sp.Skipped, SkippedRecord{Key: rec.Key, Err: err.Error()})
			continue
		}
		owners[e.Key] = append(owners[e.Key], sinkloop.Owned{In: rec.Key, Entry: e})
	}
	desired := make(map[node.Key]node.Entry, len(owners))
	for tk, os := range owners { // the sink loop's decision
		i, why := sinkloop.PickOwner(n.OnConflict, os)
		desired[tk] = os[i].Entry
		if why != "" {
			sp.Conflicts = append(sp.Conflicts, SkippedRecord{Key: tk, Err: why})
		}
	}
	sort.Slice(sp.Conflicts, func(i, j int) bool { return sp.Conflicts[i].Key < sp.Conflicts[j].Key })
	sort.Slice(sp.Skipped, func(i, j int) bool { return sp.Skipped[i].Key < sp.Skipped[j].Key })
	if fp, ok := target.(node.Document); ok {
		if desc != nil {
			sp.Target = desc.Describe()
		}
		return planFile(ctx, sp, n, target, fp, desired)
	}
	actual, err := readForPlan(ctx, target)
	if errors.Is(err, node.ErrNoActualState) {
		sp.AppendOnly = true
	} else if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", n.Address, PhaseRead, err)
	}
	if desc != nil {
		// Described as read: the read may find what Open did not (a
		// bucket another instance created since), and the plan must not
		// say "would be created" beside what it just read there.
		sp.Target = desc.Describe()
	}
	sp.Actual, sp.Desired = len(actual), len(desired)
	changes := reconcile.Diff(n.Address, desired, actual, n.Prune)
	reconcile.Sort(changes)
	sp.Changes = make([]PlannedChange, len(changes))
	sp.Projected = sp.Actual
	for i, c := range changes {
		pc := PlannedChange{Change: c}
		switch c.Action {
		case reconcile.Create:
			sp.Projected++
		case reconcile.Delete:
			sp.Projected--
		}
		if c.Action != reconcile.Delete {
			pc.Origins = originsOf(r, n, owners[c.Key])
		}
		if !maskChange(&pc) && desc != nil {
			if c.Action != reconcile.Create {
				pc.Before = desc.Show(c.Old)
			}
			if c.Action != reconcile.Delete {
				pc.After = desc.Show(c.New)
			}
		}
		if dr, ok := target.(node.DryRunner); ok && c.Action != reconcile.Delete {
			planDryRun(ctx, &pc, dr)
		}
		sp.Changes[i] = pc
	}
	brakePlan(sp, n.MaxDeletes, target)
	if !n.Prune {
		for k := range actual {
			if _, ok := desired[k]; !ok {
				sp.Kept++
			}
		}
	}
	if sp.AppendOnly {
		sp.Projected = 0 // an append-only target holds no state to count
	}
	for up := n.Input(); up != nil; up = up.Input() {
		if p, ok := up.Impl().(node.PendingLister); ok {
			sp.Pending = append(sp.Pending, p.Pending()...)
		}
	}
	return sp, nil
}

// planDryRun asks the target's backend what c would do. A change of a
// sensitive value keeps only whether it would be refused or adopt
// (neither shows a value): its lines and errors may show the secret.
func planDryRun(ctx context.Context, pc *PlannedChange, dr node.DryRunner) {
	d, err := dr.DryRun(ctx, pc.New)
	pc.Refused, pc.Adopts = d.Refused, d.Adopts
	if pc.Sensitive {
		return
	}
	pc.Detail = d.Lines
	if err != nil {
		pc.DryRunError = err.Error()
	}
}

// brakePlan marks the deletes of sp the deletion brake would hold, as run
// judges them at its first full reconcile after its input synced
// (sinkloop.Judge, over the entries the target holds before run writes
// anything): all of them when more are pending than m allows, none
// otherwise; never on an append-only target.
func brakePlan(sp *SinkPlan, m node.MaxDeletes, target node.Target) {
	if _, trail := target.(node.DecisionRecorder); trail || sp.AppendOnly {
		return
	}
	dels := 0
	for _, c := range sp.Changes {
		if c.Action == reconcile.Delete {
			dels++
		}
	}
	limit, hold := sinkloop.Judge(m, sp.Actual, dels)
	if !hold {
		return
	}
	for i := range sp.Changes {
		if sp.Changes[i].Action == reconcile.Delete {
			sp.Changes[i].Braked = true
		}
	}
	sp.DeletesBraked, sp.Projected = dels, sp.Projected+dels
	sp.Brake = fmt.Sprintf("%d deletes would be held by the deletion brake: more than max_deletes = %s allows (%d of the %d entries in the target); they are applied when the input wants keys back or max_deletes is raised",
		dels, m, limit, sp.Actual)
}

// planFile plans a target that renders one file: one change of the file,
// with its diff, or none. The entries the target holds (those its state
// says the file is the render of; none when it cannot say) are judged as
// run's first full reconcile judges them: their deletes the brake would
// hold are listed, held, and the file keeps rendering them, as it keeps
// those prune = false keeps.
func planFile(ctx context.Context, sp *SinkPlan, n *graph.Node, target node.Target, fp node.Document, desired map[node.Key]node.Entry) (*SinkPlan, error) {
	actual, err := readForPlan(ctx, target)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", sp.Address, PhaseRead, err)
	}
	sp.Actual = len(actual)
	render := maps.Clone(desired)
	var gone []node.Key
	for k := range actual {
		if _, ok := desired[k]; !ok {
			gone = append(gone, k)
		}
	}
	slices.Sort(gone)
	desc, _ := target.(node.Describer)
	if n.Prune {
		for _, k := range gone {
			pc := PlannedChange{Change: reconcile.Change{Address: sp.Address, Action: reconcile.Delete, Key: k, Old: actual[k]}}
			if !maskChange(&pc) && desc != nil {
				pc.Before = desc.Show(pc.Old)
			}
			sp.Changes = append(sp.Changes, pc)
		}
		brakePlan(sp, n.MaxDeletes, target)
		if sp.DeletesBraked == 0 {
			sp.Changes = nil // the diff shows the deletes applied
		}
	} else {
		sp.Kept = len(gone)
	}
	if sp.DeletesBraked > 0 || !n.Prune {
		for _, k := range gone {
			render[k] = actual[k]
		}
	}
	entries := slices.SortedFunc(maps.Values(render), func(a, b node.Entry) int { return cmp.Compare(a.Key, b.Key) })
	f, err := fp.PlanFile(ctx, entries)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", sp.Address, PhaseRead, err)
	}
	sp.File, sp.Desired, sp.Projected = &f, len(desired), len(render)
	sp.Target.Exists = f.Exists
	if f.Changed {
		c := reconcile.Change{Address: sp.Address, Action: reconcile.Update, Key: node.Key(f.Path)}
		if !f.Exists {
			c.Action = reconcile.Create
		}
		sp.Changes = append([]PlannedChange{{Change: c, Before: "the file on disk", After: fmt.Sprintf("rendered from %d records", len(render))}}, sp.Changes...)
	}
	return sp, nil
}

// readForPlan reads the target into a map; a target listing a key twice
// keeps the first, as the sink loop does.
func readForPlan(ctx context.Context, t node.Target) (map[node.Key]node.Entry, error) {
	entries, err := t.Actual(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[node.Key]node.Entry, len(entries))
	for _, e := range entries {
		if _, dup := out[e.Key]; !dup {
			out[e.Key] = e
		}
	}
	return out, nil
}

// sinkWarnings are what deserves a look in one sink's plan.
func sinkWarnings(sp *SinkPlan) []PlanWarning {
	var out []PlanWarning
	warn := func(format string, args ...any) {
		out = append(out, PlanWarning{Address: sp.Address, Message: fmt.Sprintf(format, args...)})
	}
	if m := sp.Target.MaxEntries; m > 0 {
		switch {
		case sp.Projected > m:
			warn("%d entries would not fit: max_entries is %d", sp.Projected, m)
		case sp.Projected*100 > m*capacityPct:
			warn("%d entries would fill %d%% of max_entries %d (above %d%%)", sp.Projected, sp.Projected*100/m, m, capacityPct)
		}
	}
	removes := 0
	for _, c := range sp.Changes {
		if c.Action == reconcile.Delete {
			removes++
		}
	}
	if sp.DeletesBraked > 0 {
		warn("%s", sp.Brake)
		removes -= sp.DeletesBraked
	}
	if removes > 0 {
		warn("would prune %d keys no record of this configuration wants (prune = true): check that no other writer owns them", removes)
	}
	if sp.Kept > 0 {
		warn("keeps %d keys no record wants because prune = false", sp.Kept)
	}
	refused, adopts := 0, 0
	for _, c := range sp.Changes {
		if c.Refused != "" {
			refused++
		}
		if c.Adopts != "" {
			adopts++
		}
	}
	if refused > 0 {
		warn("%d keys would be refused: what run would write there exists and is not the sink's (set adopt = true to take it over)", refused)
	}
	if adopts > 0 {
		warn("would adopt %d existing objects that are not the sink's (adopt = true): from then on it updates and prunes them", adopts)
	}
	if len(sp.Conflicts) > 0 {
		c := sp.Conflicts[0]
		warn("%d target keys are in conflict; the first: %s: %s", len(sp.Conflicts), c.Key, c.Err)
	}
	if len(sp.Skipped) > 0 {
		s := sp.Skipped[0]
		warn("%d records cannot be written and would be skipped; the first: %s: %s", len(sp.Skipped), s.Key, s.Err)
	}
	return out
}

// originsOf names the source objects of the input records of sink n in
// os, sorted.
func originsOf(r *engine.Runtime, n *graph.Node, os []sinkloop.Owned) []string {
	var out []string
	for _, o := range os {
		if rec, ok := r.InputRecord(n, o.In); ok && rec.Origin != nil {
			out = append(out, r.OriginName(rec.Origin, o.In))
		}
	}
	sort.Strings(out)
	return out
}

// maskChange hides both values of a change whose new or old value is
// marked sensitive: a value read back from the target carries no mark, but
// when the value wanted for the key is secret, so was the one written
// before. Views then never see the secret, nor its bytes decoded.
// It reports whether it masked (then no Describer may see the values).
func maskChange(pc *PlannedChange) bool {
	if !schema.IsSensitive(pc.New.Value) && !schema.IsSensitive(pc.Old.Value) {
		return false
	}
	pc.Sensitive = true
	if pc.Action != reconcile.Create {
		pc.Before = maskEntry(&pc.Old)
	}
	if pc.Action != reconcile.Delete {
		pc.After = maskEntry(&pc.New)
	}
	return true
}

// maskEntry replaces e's value by its masked form (schema.Masked keeps the
// structure around the secret parts; an unmarked value read back from the
// target is masked whole) and returns it as shown: the mask itself for a
// value masked whole, else empty so views render the masked structure.
func maskEntry(e *node.Entry) string {
	e.Data = nil
	if schema.IsSensitive(e.Value) {
		e.Value = schema.Masked(e.Value)
	} else {
		e.Value = cty.StringVal(schema.Mask)
	}
	if e.Value.Type() == cty.String && e.Value.AsString() == schema.Mask {
		return schema.Mask
	}
	return ""
}
