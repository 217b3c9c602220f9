package node

import (
	"maps"
	"slices"
)

// Holder is an Output that can be read back. The engine's outputs are
// Holders, so a transform whose state is what it has published
// (debounce, grace_period) reads that state there instead of keeping a
// second copy of every record.
type Holder interface {
	Output
	// Held returns the record the output holds at k, its value as it was
	// published (a packed value stays packed: compare with RawEquals).
	Held(k Key) (Record, bool)
	// HeldRecords returns a copy of every record the output holds,
	// values as published.
	HeldRecords() []Record
}

// Hold returns out as a Holder: out itself when it is one, else out
// behind a copy of what is published through it (for outputs that hold
// nothing readable, such as a test's).
func Hold(out Output) Holder {
	if h, ok := out.(Holder); ok {
		return h
	}
	return &holding{Output: out, state: map[Key]Record{}}
}

// holding keeps a copy of what passes through to its Output.
type holding struct {
	Output
	state map[Key]Record
}

func (h *holding) Apply(deltas []Delta) {
	for _, d := range deltas {
		if d.Delete {
			delete(h.state, d.Key)
		} else {
			h.state[d.Key] = Record{Key: d.Key, Value: d.Value, Origin: d.Origin}
		}
	}
	h.Output.Apply(deltas)
}

func (h *holding) Replace(records []Record) {
	h.state = make(map[Key]Record, len(records))
	for _, r := range records {
		h.state[r.Key] = r
	}
	h.Output.Replace(records)
}

func (h *holding) Held(k Key) (Record, bool) {
	r, ok := h.state[k]
	return r, ok
}

func (h *holding) HeldRecords() []Record {
	return slices.AppendSeq(make([]Record, 0, len(h.state)), maps.Values(h.state))
}
