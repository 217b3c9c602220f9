package audit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pipeline/pipeline/internal/redact"
)

// jsonPath is a parsed redact path: the line field it starts at ("value",
// "source" or "detail") and the steps below it. A step is a member name, an
// index, or "*" (every member or element).
type jsonPath struct {
	field string
	steps []step
}

type step struct {
	name  string
	index int // -1 unless an index step
	all   bool
}

// parseJSONPath reads the subset of JSONPath that names fields: `$`, then
// `.name`, `['name']`, `["name"]`, `[N]`, `[*]` or `.*`.
func parseJSONPath(p string) (jsonPath, error) {
	if !strings.HasPrefix(p, "$") {
		return jsonPath{}, errors.New("a path starts at the line's root, `$`, such as `$.value.labels`")
	}
	var steps []step
	rest := p[1:]
	for rest != "" {
		var s step
		var err error
		switch rest[0] {
		case '.':
			s, rest, err = dotStep(rest[1:])
		case '[':
			s, rest, err = bracketStep(rest[1:])
		default:
			err = fmt.Errorf("unexpected %q; write `.name` or `[...]` after each step", rest[:1])
		}
		if err != nil {
			return jsonPath{}, err
		}
		steps = append(steps, s)
	}
	if len(steps) < 2 {
		return jsonPath{}, errors.New("only fields under `$.value`, `$.source` or `$.detail` can be removed, such as `$.value.labels`")
	}
	switch f := steps[0]; {
	case f.all || f.index >= 0:
		return jsonPath{}, errors.New("the first step names a line field: value, source or detail")
	case f.name != "value" && f.name != "source" && f.name != "detail":
		return jsonPath{}, fmt.Errorf("the line field %q cannot be redacted; only fields under `$.value`, `$.source` or `$.detail` can", f.name)
	}
	return jsonPath{field: steps[0].name, steps: steps[1:]}, nil
}

func dotStep(s string) (step, string, error) {
	if strings.HasPrefix(s, "*") {
		return step{all: true, index: -1}, s[1:], nil
	}
	end := strings.IndexAny(s, ".[")
	if end < 0 {
		end = len(s)
	}
	if end == 0 {
		return step{}, "", errors.New("empty member name after `.`")
	}
	return step{name: s[:end], index: -1}, s[end:], nil
}

func bracketStep(s string) (step, string, error) {
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return step{}, "", errors.New("`[` without a closing `]`")
	}
	in, rest := s[:end], s[end+1:]
	switch {
	case in == "*":
		return step{all: true, index: -1}, rest, nil
	case len(in) >= 2 && (in[0] == '\'' || in[0] == '"') && in[len(in)-1] == in[0]:
		return step{name: in[1 : len(in)-1], index: -1}, rest, nil
	}
	i, err := strconv.Atoi(in)
	if err != nil || i < 0 {
		return step{}, "", fmt.Errorf("%q is neither a quoted name, an index nor `*`", in)
	}
	return step{index: i}, rest, nil
}

// remove deletes what the steps select from v (a JSON-like value) and
// returns v; elements removed from a list leave the list shorter.
func remove(v any, steps []step) any {
	if len(steps) == 0 {
		return v
	}
	s, last := steps[0], len(steps) == 1
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			if s.all || (s.index < 0 && k == s.name) {
				if last {
					delete(x, k)
				} else {
					x[k] = remove(child, steps[1:])
				}
			}
		}
	case []any:
		out := x[:0]
		for i, child := range x {
			hit := s.all || i == s.index
			switch {
			case hit && last:
				continue
			case hit:
				child = remove(child, steps[1:])
			}
			out = append(out, child)
		}
		return out
	}
	return v
}

// scrub replaces every string that holds a sensitive value, in v and below,
// with "(sensitive)". It is the second net: values marked sensitive were
// masked before (schema.Masked); this catches the raw text of a secret that
// reached a string without its mark (an error naming a path).
func scrub(v any, secrets *redact.Redactor) any {
	if secrets.Empty() {
		return v
	}
	switch x := v.(type) {
	case string:
		return scrubString(x, secrets)
	case map[string]any:
		for k, child := range x {
			x[k] = scrub(child, secrets)
		}
	case []any:
		for i, child := range x {
			x[i] = scrub(child, secrets)
		}
	}
	return v
}

// scrubString masks the whole of a string that holds a secret.
func scrubString(s string, secrets *redact.Redactor) string {
	if secrets.String(s) != s {
		return redact.Mask
	}
	return s
}
