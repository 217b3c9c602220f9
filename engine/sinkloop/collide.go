package sinkloop

import (
	"fmt"
	"sort"
	"strings"

	"github.com/pipeline/pipeline/engine/node"
)

// Two input keys may map to one target key: a target canonicalises keys
// (an ebpf_map's ipv4_prefix key holds 10.0.0.0/8 for both "10.0.0.0/8"
// and "10.1.2.3/8"). The entry the target key gets is then decided by the
// sink's on_conflict rule, over the input keys in sorted order, by one
// function (PickOwner) that plan and run share: "first" takes the
// smallest input key's entry, "last" the largest's, and "error" the
// smallest's while reporting a conflict when their entries differ.

// Owned is one input key's prepared entry at a shared target key.
type Owned struct {
	In    node.Key
	Entry node.Entry
}

// PickOwner returns the index in os (sorted here by input key) of the
// entry the target key gets, and why the key is in conflict ("" when it is
// not). Plan and the loop both decide with it.
func PickOwner(rule string, os []Owned) (int, string) {
	if len(os) < 2 {
		return 0, ""
	}
	sort.Slice(os, func(i, j int) bool { return os[i].In < os[j].In })
	switch rule {
	case node.ConflictFirst:
		return 0, ""
	case node.ConflictLast:
		return len(os) - 1, ""
	}
	var differ []string
	for _, o := range os[1:] {
		if !o.Entry.Same(os[0].Entry) {
			differ = append(differ, fmt.Sprintf("%q", o.In))
		}
	}
	if len(differ) == 0 {
		return 0, ""
	}
	return 0, fmt.Sprintf("input keys %s map to the same target key as %q with a different value; the key keeps %q's (on_conflict = \"error\"; set \"first\" or \"last\" to choose)",
		strings.Join(differ, ", "), os[0].In, os[0].In)
}

// sharers tracks the target keys that an input key other than the target
// key itself maps to: each one's owners with their entries, and the keys
// in conflict now.
type sharers struct {
	by      map[node.Key]map[node.Key]keptEntry
	clashes map[node.Key]string
}

// share records that input key in wants e at ks (whose current sole owner,
// if any, is the target key itself, holding ks.want) and sets ks.want to
// the decided entry. It reports false when ks is not shared, so the
// caller sets ks.want itself.
func (s *state) share(ks *keyState, in node.Key, e keptEntry) bool {
	m := s.desired.shared.by[ks.key]
	if m == nil {
		if in == ks.key {
			return false
		}
		if s.desired.shared.by == nil {
			s.desired.shared.by, s.desired.shared.clashes = map[node.Key]map[node.Key]keptEntry{}, map[node.Key]string{}
		}
		m = map[node.Key]keptEntry{}
		if ks.self && ks.owners > 0 {
			m[ks.key] = ks.want
		}
		s.desired.shared.by[ks.key] = m
	}
	m[in] = e
	s.decideShared(ks, m)
	return true
}

// unshare drops input key in from ks's owners; it reports false when ks
// is not shared.
func (s *state) unshare(ks *keyState, in node.Key) bool {
	m := s.desired.shared.by[ks.key]
	if m == nil {
		return false
	}
	delete(m, in)
	if _, onlySelf := m[ks.key]; len(m) == 0 || (len(m) == 1 && onlySelf) {
		if onlySelf {
			ks.want = m[ks.key]
		}
		delete(s.desired.shared.by, ks.key)
		delete(s.desired.shared.clashes, ks.key)
		return len(m) > 0
	}
	s.decideShared(ks, m)
	return true
}

func (s *state) decideShared(ks *keyState, m map[node.Key]keptEntry) {
	os := make([]Owned, 0, len(m))
	for in, e := range m {
		os = append(os, Owned{in, e.entry(ks.key)})
	}
	i, why := PickOwner(s.cfg.OnConflict, os)
	ks.want = m[os[i].In]
	if why == "" {
		delete(s.desired.shared.clashes, ks.key)
		return
	}
	if _, was := s.desired.shared.clashes[ks.key]; !was {
		s.log.Warn("input keys conflict on a target key", "key", ks.key, "err", why)
	}
	s.desired.shared.clashes[ks.key] = why
}
