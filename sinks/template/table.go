package template

import (
	"maps"
	"slices"
	"strings"

	"github.com/pipeline/pipeline/engine/node"
)

// table is the entries' records, sorted by key. Target.Update and
// Delete note each change (set, remove); sorted merges the changes made
// since it was last called into the sorted records, so that a render, the
// state file and explain walk the records in order without sorting every
// key or looking each one up again: a change of a few entries costs a
// binary search each and a copy of the pointers.
type table struct {
	rows    []*record            // sorted by key, as of the last call of sorted
	changes map[node.Key]*record // each key changed since: its new record, nil when deleted
}

// set makes r the record of its key.
func (t *table) set(r *record) { t.note(node.Key(r.key), r) }

// remove deletes k's record.
func (t *table) remove(k node.Key) { t.note(k, nil) }

func (t *table) note(k node.Key, r *record) {
	if t.changes == nil {
		t.changes = map[node.Key]*record{}
	}
	t.changes[k] = r
}

// sorted is the records, sorted by key. The slice is never changed: a
// call after a change makes another.
func (t *table) sorted() []*record {
	if len(t.changes) == 0 {
		return t.rows
	}
	out := make([]*record, 0, len(t.rows)+len(t.changes))
	i := 0 // t.rows[:i] are in out or replaced
	for _, k := range slices.Sorted(maps.Keys(t.changes)) {
		j, found := slices.BinarySearchFunc(t.rows[i:], k, func(r *record, k node.Key) int { return strings.Compare(r.key, string(k)) })
		out = append(out, t.rows[i:i+j]...)
		i += j
		if found {
			i++ // replaced or deleted
		}
		if r := t.changes[k]; r != nil {
			out = append(out, r)
		}
	}
	t.rows = append(out, t.rows[i:]...)
	clear(t.changes)
	return t.rows
}
