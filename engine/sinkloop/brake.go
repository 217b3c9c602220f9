package sinkloop

import (
	"fmt"
	"slices"

	"github.com/pipeline/pipeline/engine/node"
)

// The deletion brake (max_deletes): a round's deletes, together with
// those the brake holds already, are the deletes pending at once. When
// they are more than max_deletes allows of the entries the target holds,
// none is applied: each key is marked braked and listed in state.braked,
// and upserts go on. The window is the deletes pending at once, not a
// round's nor a time's: a source that empties at once (a file rewritten
// to [], a selector that matches nothing) needs them all in one round,
// while churn deletes a few at a time. What releases them is what the
// count is made of: the input wanting keys back (fewer deletes pending)
// or a larger max_deletes (a reload rebuilds the sink, whose new run
// computes the brake again from the target's actual state and the
// input). A resync or a restart computes the same count again, and holds
// again.

// brakeSlack is how far the braked list may outgrow twice the braked
// keys before it is compacted.
const brakeSlack = 1024

// brakes reports whether the brake applies to the target: not to an
// append-only one (its deletes are lines appended: an audit trail, which
// records decisions, or a target with no actual state).
func (s *state) brakes() bool {
	_, trail := s.target.(node.DecisionRecorder)
	return !trail && !s.appendOnly
}

// Judge is the deletion brake's one computation, which run (each round,
// brake) and plan share: dels deletes pending at once are held when they
// are more than max_deletes m allows of base entries (limit), unless m
// would let them all pass from a target holding only them ("100%": no
// brake).
func Judge(m node.MaxDeletes, base, dels int) (limit int, hold bool) {
	limit = m.Limit(base)
	return limit, dels > limit && m.Limit(dels) < dels
}

// limit is how many deletes may be pending at once: max_deletes of the
// round's base (brakeBase).
func (s *state) limit() int { return s.cfg.MaxDeletes.Limit(s.base) }

// brakeBase is what a round counts max_deletes of, taken when it begins:
// the entries the target holds, as plan counts them (the entries its read
// of the target finds), not counting the round's own creations (written
// before the brake judges its deletes) nor the creations this run wrote
// before its input synced (early). Plan reads the target before run
// writes anything; a sink whose input delivers records before it syncs
// (a fan-in, a source listing in pages) creates some of them first, and
// counting those would let run apply deletes plan showed held. early
// counts until the first round after the sync holds nothing (brake): a
// resync then judges the deletes held at the sync as the sync did.
func (s *state) brakeBase() int { return max(s.actual.n-s.early, 0) }

// unbrake clears ks's braked mark (it is decided again, or gone).
func (s *state) unbrake(ks *keyState) {
	if ks.braked {
		ks.braked = false
		s.nbraked--
	}
}

// brake judges a round's deletes, dels: it returns the deletes to apply
// (dels and every delete it held, when all pending deletes are within the
// limit), or nil when it holds them all.
func (s *state) brake(dels []*keyState) []*keyState {
	n := len(dels) + s.nbraked
	if n == 0 {
		s.forgetEarly()
		return dels
	}
	if limit, hold := Judge(s.cfg.MaxDeletes, s.base, n); s.brakes() && hold {
		for _, ks := range dels {
			ks.braked = true
			s.braked = append(s.braked, ks.ref)
		}
		s.nbraked += len(dels)
		if len(s.braked) > 2*s.nbraked+brakeSlack {
			s.braked = slices.DeleteFunc(s.braked, func(ref uint32) bool { ks := s.keys.at(ref); return ks == nil || !ks.braked })
		}
		if len(dels) > 0 {
			s.log.Warn("deletes held by the deletion brake", "count", s.nbraked, "limit", limit, "entries", s.base,
				"max_deletes", s.cfg.MaxDeletes.String())
			s.cfg.Braked(s.nbraked, s.brakeDetail())
		}
		s.met.DeletesBraked.Set(float64(s.nbraked))
		return nil
	}
	s.forgetEarly()
	if s.nbraked == 0 {
		return dels
	}
	released := s.nbraked
	for _, ref := range s.braked {
		if ks := s.keys.at(ref); ks != nil && ks.braked {
			ks.braked = false
			dels = append(dels, ks)
		}
	}
	s.braked, s.nbraked = s.braked[:0], 0
	s.met.DeletesBraked.Set(0)
	s.log.Info("held deletes released", "count", released, "deletes", len(dels), "limit", s.limit(), "entries", s.base)
	s.cfg.Braked(0, fmt.Sprintf("%d held deletes released: %d deletes pending, within max_deletes = %s (%d of %d entries)",
		released, len(dels), s.cfg.MaxDeletes, s.limit(), s.base))
	return dels
}

// forgetEarly stops discounting the creations written before the input
// synced, once a round after the sync holds no delete (brakeBase).
func (s *state) forgetEarly() {
	if s.synced {
		s.early = 0
	}
}

// dropBrake forgets every braked mark (standby: the next leader's full
// reconcile computes the brake again).
func (s *state) dropBrake() {
	for _, ref := range s.braked {
		if ks := s.keys.at(ref); ks != nil {
			ks.braked = false
		}
	}
	if s.nbraked > 0 {
		s.met.DeletesBraked.Set(0)
	}
	s.braked, s.nbraked = s.braked[:0], 0
}

// brakeDetail says what the brake holds, for /readyz and explain.
func (s *state) brakeDetail() string {
	return fmt.Sprintf("%d deletes held by the deletion brake: more than max_deletes = %s allows (%d of the %d entries in the target); they are applied when the input wants keys back or max_deletes is raised",
		s.nbraked, s.cfg.MaxDeletes, s.limit(), s.base)
}
