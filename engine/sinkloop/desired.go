package sinkloop

import (
	"time"

	"github.com/pipeline/pipeline/engine/node"
)

// desired is what the input wants, in the target's keys: each input key's
// target key (the target's Prepare may canonicalise it), the claims of
// input keys on target keys (keyState.owners, keyState.self), the target
// keys several input keys claim (collide.go) and each target key's wanted
// entry (keyState.want). The per-key parts live in the key states, so
// that a full pass finds what a key wants and what the target holds
// there in one place.
type desired struct {
	// alias maps an input key to its target key where the two differ (an
	// input key absent here maps to itself, when that key's state says so:
	// keyState.self).
	alias  map[node.Key]node.Key
	shared sharers // target keys several input keys map to (collide.go)
}

// stateOf returns the state of target key tk, creating it.
func (s *state) stateOf(tk node.Key) *keyState {
	if ks := s.keys.get(tk); ks != nil {
		return ks
	}
	return s.keys.add(tk)
}

// targetOf returns the target key input key k maps to.
func (s *state) targetOf(k node.Key) (node.Key, bool) {
	if tk, ok := s.desired.alias[k]; ok {
		return tk, true
	}
	if ks := s.keys.get(k); ks != nil && ks.self {
		return k, true
	}
	return "", false
}

// inputKeyOf finds the input key that maps to target key tk (linear in
// the keys whose target form differs; explain only).
func (s *state) inputKeyOf(tk node.Key) node.Key {
	if ks := s.keys.get(tk); ks != nil && ks.self {
		return tk
	}
	for k, t := range s.desired.alias {
		if t == tk {
			return k
		}
	}
	return tk
}

// put records that the input wants r: its prepared entry at its target
// key, claimed by r.Key.
func (s *state) put(r node.Record, t time.Time) {
	e, err := s.target.Prepare(r)
	if err != nil {
		s.met.Skipped.Inc()
		s.log.Warn("record skipped: cannot encode", "key", r.Key, "err", err)
		s.del(r.Key, t) // an older, valid version must not linger
		return
	}
	k := s.keep(&e)
	old, had := s.targetOf(r.Key)
	moved := !had || old != e.Key // r.Key becomes an owner of e.Key
	if had && moved {
		s.release(r.Key, old, t)
	}
	ks := s.stateOf(e.Key)
	if !s.share(ks, r.Key, k) {
		ks.want = k
	}
	if moved {
		ks.owners++
		if e.Key == r.Key {
			ks.self = true
		} else {
			s.desired.alias[r.Key] = e.Key
		}
	}
	s.touch(ks, t)
}

// del records that the input no longer wants input key k.
func (s *state) del(k node.Key, t time.Time) {
	if tk, ok := s.targetOf(k); ok {
		s.release(k, tk, t)
	}
}

// release drops input key k's claim on target key tk.
func (s *state) release(k, tk node.Key, t time.Time) {
	ks := s.keys.get(tk)
	if k == tk {
		ks.self = false
	} else {
		delete(s.desired.alias, k)
	}
	s.unshare(ks, k)
	if ks.owners--; ks.owners <= 0 {
		ks.owners, ks.want = 0, keptEntry{}
	}
	s.touch(ks, t)
}

// disown forgets every input key (a Reset follows): each key wanted so
// far is looked at again, and deleted if the new state does not want it.
func (s *state) disown() {
	for ks := range s.keys.states {
		if ks.owners > 0 {
			ks.owners, ks.self, ks.want = 0, false, keptEntry{}
			s.touch(ks, time.Time{})
		}
	}
	clear(s.desired.alias)
	s.desired.shared = sharers{}
}
