// Package reconcile computes the difference between what a sink should hold
// (desired) and what its target holds (actual). The sink loop applies that
// difference and plan prints it: both call Diff, so plan cannot disagree
// with run. It knows nothing of how targets are written.
package reconcile

import (
	"cmp"
	"slices"

	"github.com/pipeline/pipeline/engine/node"
)

// Action is what a change does to one key.
type Action rune

// The actions, printed as Terraform prints them.
const (
	Create Action = '+'
	Update Action = '~'
	Delete Action = '-'
)

func (a Action) String() string {
	switch a {
	case Create:
		return "create"
	case Update:
		return "update"
	case Delete:
		return "delete"
	}
	return "unknown"
}

// Change is one key's difference: Old is the entry the target holds (zero
// for a create), New the one it should hold (zero for a delete).
type Change struct {
	Address string
	Action  Action
	Key     node.Key
	Old     node.Entry
	New     node.Entry
}

// Decide is the rule of every reconcile, full or incremental, run or plan:
// what to do with one key given the entry the input wants there (if
// wanted) and the entry the target holds (if inTarget); same says
// whether the two are the same (node.Entry.Same), and is read only when
// the key is both wanted and in the target, so a caller computes it only
// then: wanted && inTarget && have.Same(want). A key in the target but
// not wanted is deleted only when deletable (prune, and the input
// synced). ok is false when nothing is to be done.
func Decide(wanted, inTarget, same, deletable bool) (Action, bool) {
	switch {
	case wanted && !inTarget:
		return Create, true
	case wanted && !same:
		return Update, true
	case !wanted && inTarget && deletable:
		return Delete, true
	}
	return 0, false
}

// Diff returns the changes that make actual equal to desired, in no
// particular order (Sort them to print). With prune false, keys present only
// in actual are left alone. Entries compare with node.Entry.Same (their bytes
// when encoded, else their values).
func Diff(address string, desired, actual map[node.Key]node.Entry, prune bool) []Change {
	out := make([]Change, 0, max(len(desired)-len(actual), 16))
	for k, want := range desired {
		have, inTarget := actual[k]
		if a, ok := Decide(true, inTarget, inTarget && have.Same(want), prune); ok {
			out = append(out, Change{Address: address, Action: a, Key: k, Old: have, New: want})
		}
	}
	for k, have := range actual {
		if _, wanted := desired[k]; !wanted {
			if a, ok := Decide(false, true, false, prune); ok {
				out = append(out, Change{Address: address, Action: a, Key: k, Old: have})
			}
		}
	}
	return out
}

// Sort orders changes by address, then key.
func Sort(cs []Change) {
	slices.SortFunc(cs, func(a, b Change) int { return cmp.Or(cmp.Compare(a.Address, b.Address), cmp.Compare(a.Key, b.Key)) })
}
