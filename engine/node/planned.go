package node

import (
	"context"
	"errors"
	"fmt"
)

// ErrPlanned is returned by the runtime methods of a Planned node.
var ErrPlanned = errors.New("not implemented yet")

// PlannedSource is what the constructor of a Status: Planned source type
// returns once its block decoded cleanly: the configuration validates, and
// the runtime refuses it before starting anything (engine.NewRuntime). Its
// Run only returns ErrPlanned, for a caller that skips that check.
type PlannedSource struct{ Address string }

// Run implements Source.
func (p PlannedSource) Run(context.Context, Env, Output) error {
	return fmt.Errorf("%s: %w", p.Address, ErrPlanned)
}

// PlannedSink is the sink counterpart of PlannedSource.
type PlannedSink struct{ Address string }

// Open implements Sink.
func (p PlannedSink) Open(context.Context, Env, Mode) (Target, error) {
	return nil, fmt.Errorf("%s: %w", p.Address, ErrPlanned)
}

var (
	_ Source = PlannedSource{}
	_ Sink   = PlannedSink{}
)
