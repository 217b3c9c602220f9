// Package redact is the second net behind sensitive marks: it masks the
// text of sensitive values in text and values bound for an output (logs,
// /readyz, the log sink, the audit trail) that no marked value reaches
// whole, such as an error naming a path computed from a secret. Values
// themselves are masked by their mark (schema.Masked), whatever their
// length or spelling. It matches a secret's text wherever it stands alone
// (a whole string, a whole value, at any length) and, from minLen
// characters on, inside longer text in every spelling an output gives it:
// raw, Go-quoted and JSON-escaped. Matching a shorter text inside text
// would mask unrelated letters.
//
// It is for views; the configuration's own evaluation is schema's.
package redact

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/zclconf/go-cty/cty"
)

// Mask replaces a secret.
const Mask = "(sensitive)"

// minLen is the shortest secret masked inside longer text.
const minLen = 4

// Redactor masks a set of secrets, which Add may grow (a reloaded
// configuration brings new ones; old ones stay masked). It is safe for
// concurrent use. The zero value and nil mask nothing.
type Redactor struct {
	mu    sync.RWMutex
	exact map[string]bool
	inner []string // spellings matched inside text, longest first
}

// New returns a Redactor for secrets (empty ones are ignored).
func New(secrets []string) *Redactor {
	r := &Redactor{exact: map[string]bool{}}
	r.add(secrets)
	return r
}

// Add masks secrets from now on too.
func (r *Redactor) Add(secrets []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.exact == nil {
		r.exact = map[string]bool{}
	}
	r.add(secrets)
}

func (r *Redactor) add(secrets []string) {
	seen := map[string]bool{}
	for _, v := range r.inner {
		seen[v] = true
	}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		quoted := strconv.Quote(s)
		js, _ := json.Marshal(s)
		for i, v := range []string{s, quoted[1 : len(quoted)-1], string(js[1 : len(js)-1]), quoted, string(js)} {
			r.exact[v] = true
			if i < 3 && len(s) >= minLen && !seen[v] {
				seen[v] = true
				r.inner = append(r.inner, v)
			}
		}
	}
	// Longest first, so an escaped form is masked whole before its core.
	slices.SortStableFunc(r.inner, func(a, b string) int { return len(b) - len(a) })
}

// Empty reports whether r masks nothing.
func (r *Redactor) Empty() bool {
	if r == nil {
		return true
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.exact) == 0
}

// String masks the secrets in s.
func (r *Redactor) String(s string) string {
	if r.Empty() {
		return s
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.exact[s] || r.exact[strings.TrimSpace(s)] {
		return Mask
	}
	for _, v := range r.inner {
		s = strings.ReplaceAll(s, v, Mask)
	}
	return s
}

// Value masks the secrets in every string of v. Only strings change, so
// every collection keeps its type.
func (r *Redactor) Value(v cty.Value) cty.Value {
	if r.Empty() {
		return v
	}
	out, err := cty.Transform(v, func(_ cty.Path, v cty.Value) (cty.Value, error) {
		if v.Type() != cty.String || !v.IsKnown() || v.IsNull() || v.IsMarked() {
			return v, nil
		}
		if s := v.AsString(); r.String(s) != s {
			return cty.StringVal(r.String(s)), nil
		}
		return v, nil
	})
	if err != nil {
		return v
	}
	return out
}
