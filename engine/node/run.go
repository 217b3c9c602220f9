package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/schema"
)

// Env is what the engine hands a running node.
type Env struct {
	// Logger already carries node=<address>.
	Logger *slog.Logger
	// Metrics registers the node's own collectors. Every metric registered
	// here gets the label node=<address>, and all of them are dropped when
	// the node stops (so a rebuilt node can register again).
	Metrics prometheus.Registerer
	// Health receives the node's health; the engine shows it on /readyz.
	Health Health
	// Address is the node's KIND.TYPE.NAME.
	Address string
	// Decisions receives the node's decisions (see Decide); it is safe
	// for concurrent use and does not wait for slow recorders longer than
	// a file write. nil in tests.
	Decisions func(Decision)
	// ConfigGeneration is the config generation the node was built for:
	// during a reload, the one being loaded. 0 when unknown (plan, tests).
	ConfigGeneration uint64
	// Clock is the time the node reads and waits on; nil is the wall clock.
	// Use Now and ConsumeTimed rather than the time package.
	Clock Clock
	// OneShot is set when the node runs only until its output has synced
	// (plan): a source need not watch for later changes.
	OneShot bool
}

// State is a node's health.
type State int

// Health states, in order of increasing trouble.
const (
	Pending  State = iota // not yet connected or synced
	Healthy               // working
	Degraded              // working with errors (watch errors, failed entries, map full)
	Down                  // not working (disconnected, cannot open the target)
)

var stateNames = [...]string{Pending: "pending", Healthy: "healthy", Degraded: "degraded", Down: "down"}

func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return "unknown"
	}
	return stateNames[s]
}

// Health receives health reports. Set is cheap and safe for concurrent use.
type Health interface {
	Set(s State, detail string)
}

// Output is where a source or transform publishes its collection. Its
// methods never block for long and never drop data: a consumer that falls
// behind is resynchronised from the collection's state.
type Output interface {
	// Apply publishes a batch of deltas atomically. The output takes
	// ownership of the slice.
	Apply(deltas []Delta)
	// Replace makes the collection equal to records (which must have unique
	// keys) by publishing only the difference. Use it for initial states and
	// after the node's own input was reset.
	Replace(records []Record)
	// MarkSynced records that the node delivered its complete initial state.
	// It is idempotent.
	MarkSynced()
}

// Input is a transform's or sink's subscription to its upstream collection.
type Input interface {
	// Next blocks until the next event or until ctx ends (then it returns
	// ctx.Err()). The first event is always a Reset.
	Next(ctx context.Context) (Event, error)
}

// Source watches the world and publishes a collection.
type Source interface {
	// Run owns the source until ctx ends; it returns nil then, or an error
	// when the source fails (the engine retries it with backoff).
	Run(ctx context.Context, env Env, out Output) error
}

// Transform turns one collection into another.
type Transform interface {
	// Run consumes in and publishes to out until ctx ends.
	Run(ctx context.Context, env Env, in Input, out Output) error
}

// Mode says what a sink's target is opened for.
type Mode int

const (
	// ModeRun opens the target for writing, creating it when absent.
	ModeRun Mode = iota
	// ModePlan opens it read-only and creates nothing.
	ModePlan
)

// Sink programs the world. The engine owns the reconcile loop (batching,
// retries, periodic full reconcile, prune); the sink only opens a Target.
type Sink interface {
	// Open opens the sink's target. With ModePlan it must create and write
	// nothing; when the target does not exist, Actual then returns nothing.
	Open(ctx context.Context, env Env, mode Mode) (Target, error)
}

// Entry is one key of a target in the target's own canonical form.
type Entry struct {
	Key Key
	// Value is the entry's value as the target shows it (for a BPF map,
	// its encoded bytes in hex). Entries without Data compare by Value.
	Value cty.Value
	// Data is the target's encoded form of the entry, set by Prepare and
	// Actual for targets that write bytes (for a BPF map: the key's bytes
	// followed by the value's); entries with Data compare by these bytes
	// (see Same). nil for targets that need none.
	Data []byte
	// Err is set by Update and Delete for an entry that failed.
	Err error
}

// Same reports whether e and o hold the same value (their keys are
// compared by the caller): their encoded bytes when the target encodes,
// else their values.
func (e Entry) Same(o Entry) bool {
	if e.Data != nil || o.Data != nil {
		return bytes.Equal(e.Data, o.Data)
	}
	if e.Value.RawEquals(o.Value) {
		return true
	}
	// A sensitive mark says how a value may be shown, not what it is: a
	// desired value computed from a secret equals the raw one read back.
	if schema.IsSensitive(e.Value) || schema.IsSensitive(o.Value) {
		a, _ := e.Value.UnmarkDeep()
		b, _ := o.Value.UnmarkDeep()
		return a.RawEquals(b)
	}
	return false
}

// Chunked is implemented by a target of fixed-width entries whose Data
// identifies the key (two keys never share Data), as a BPF map's key bytes
// followed by its value bytes do. The loop reads and writes such a target
// in chunks of Data laid end to end instead of entries: for an IPv4 key
// and a u32 value, 8 bytes per entry to gather and compare where an Entry
// takes 88. The loop writes such a target through Chunked alone; its
// Update, Delete and Actual stay for plan, explain and tests.
type Chunked interface {
	// ScanActual is a full read that builds nothing for an entry the loop
	// holds already: it calls known with each chunk's Data (len(known)
	// entries, width bytes each, valid only during the call; one width
	// per call) before it builds anything, and known sets known[i] when
	// the loop holds the i-th entry with exactly those bytes. For each
	// entry not known, the target builds the entry and passes it to add.
	// A nil known recognises nothing.
	ScanActual(ctx context.Context, known func(data []byte, width int, known []bool), add func(Entry)) error
	// UpdateData is Update of the len(errs) entries whose Data lie end to
	// end in data, width bytes each: it sets errs[i] when the i-th fails
	// and leaves the others nil.
	UpdateData(ctx context.Context, data []byte, width int, errs []error)
	// DeleteData is Delete of the len(errs) entries whose Data lie end to
	// end in data, width bytes each. It reads only each entry's key, which
	// its Data starts with, so the loop may cut longer Data (an entry read
	// back whole) to width.
	DeleteData(ctx context.Context, data []byte, width int, errs []error)
	// ValueOf returns the Value (as Prepare and Actual give it, without a
	// sensitive mark) of the entry with Data d: the loop keeps an entry's
	// bytes and not its value, and shows it through ValueOf.
	ValueOf(d []byte) cty.Value
	// Count is told how many entries the target holds after every round,
	// as far as the loop knows: a hash map cannot count its entries
	// without reading them all. It runs on the loop's goroutine.
	Count(n int)
}

// KeyReader is implemented by a target that can read the entry at one key
// without reading them all (a BPF map's lookup). Explain reads the target
// at the key it is asked about through it; a target without it is read
// whole (Actual). ReadEntry reads the entry at e's key (e as Prepare or
// Actual gave it) and returns it as Actual would, with ok false when the
// target holds nothing there. It is called on the sink loop's goroutine
// and writes nothing.
type KeyReader interface {
	ReadEntry(ctx context.Context, e Entry) (actual Entry, ok bool, err error)
}

// Readier is implemented by a target whose Open returns before it can
// write (a NATS connection still dialling, a bucket not bound yet). Ready
// blocks until the target can write, or until ctx ends, and then returns
// why it cannot. A hot reload waits for the new sinks' targets to be ready
// before it swaps, and rolls back when one is not; at start, the sink loop
// writes and retries without waiting.
type Readier interface {
	Ready(ctx context.Context) error
}

// ErrNoActualState is returned by Actual of append-only targets (audit, NATS
// publish, log): they cannot be read back, so plan lists what they would
// append and the engine never prunes them.
var ErrNoActualState = errors.New("target has no readable state")

// Target is one sink's boundary in the world: a pinned map, a bucket plus a
// key prefix, a file. Prune never leaves it.
type Target interface {
	// Prepare converts an input record into the entry the target would
	// hold. It does no I/O. An error skips the record (counted and logged
	// by the engine); nothing is written half.
	Prepare(r Record) (Entry, error)
	// Actual reads every entry the target holds, or ErrNoActualState.
	Actual(ctx context.Context) ([]Entry, error)
	// Update writes entries. It is idempotent, and it sets batch[i].Err for
	// each entry that failed instead of failing the whole batch.
	Update(ctx context.Context, batch []Entry)
	// Delete removes entries; deleting a missing key succeeds. Value holds
	// the last value when the engine knows it.
	Delete(ctx context.Context, batch []Entry)
	// Close releases the target. A sink's target keeps its state: a pinned
	// map is not emptied.
	Close() error
}

// Consume calls handle with every event of in, in order, until ctx ends
// (then it returns nil) or the input fails (an error naming address). It is
// the whole loop of a transform that has no timers.
func Consume(ctx context.Context, in Input, address string, handle func(Event)) error {
	for {
		ev, err := in.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("%s: read input: %w", address, err)
		}
		handle(ev)
	}
}

// ConsumeTimed is the whole loop of a transform with one timer: it calls
// handle with every event of in and fire when the time next reports is
// reached, asking next after each of them (ok false: nothing is due). The
// timer runs on env's clock. It returns nil when ctx ends, or an error
// naming address when the input fails.
func ConsumeTimed(ctx context.Context, env Env, in Input, address string, handle func(Event), fire func(), next func() (due time.Time, ok bool)) error {
	clock := env.clock()
	timer := clock.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	arm := func() {
		if due, ok := next(); ok {
			timer.Reset(max(due.Sub(clock.Now()), 0))
		} else {
			timer.Stop()
		}
	}
	if p, ok := in.(Poller); ok {
		return consumePolled(ctx, p, timer, handle, fire, arm)
	}
	// An input that cannot be polled (a test's) is pumped into a channel
	// until ctx ends or Next fails, so that the loop selects on it and the
	// timer together.
	events := make(chan Event)
	go func() {
		defer close(events)
		for ev, err := in.Next(ctx); err == nil; ev, err = in.Next(ctx) {
			select {
			case events <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C():
			fire()
		case ev, ok := <-events:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("%s: read input: input ended", address)
			}
			handle(ev)
		}
		arm()
	}
}

// consumePolled is ConsumeTimed's loop on an engine input: the timer is
// armed before the input is polled again, so when the input finds nothing
// waiting the transform is at rest with its next wake-up registered.
func consumePolled(ctx context.Context, in Poller, timer Timer, handle func(Event), fire func(), arm func()) error {
	for {
		arm()
		if ev, ok := in.Poll(); ok {
			handle(ev)
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C():
			fire()
		case <-in.Ready():
		}
	}
}
