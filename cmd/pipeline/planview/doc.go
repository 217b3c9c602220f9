// Package planview is how `pipeline plan` shows a plan: secrets masked
// first (Mask), then the human view (Text: per sink its target and its
// first changes, coloured on a terminal) or the --json document (JSON,
// versioned: docs/plan.md), with what a reload of a running instance
// would do to its nodes when planned --against it (Reload).
//
// It renders an plan.PlanResult; computing the plan is the engine's
// (plan.Plan) and reading the running instance's graph is the plan
// command's.
package planview
