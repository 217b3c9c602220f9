package kobject

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/internal/jpath"
	"github.com/pipeline/pipeline/schema"
)

// ErrMissing is wrapped by Keyer.Key when an object lacks an index path.
var ErrMissing = errors.New("index path missing")

// Keyer computes record keys from objects: the values of the index_by
// paths joined with ":", or namespace/name (name for cluster-scoped
// objects) when no path is configured. A path that walks a map (`*`,
// `..`) visits its keys in sorted order, so an object's key does not
// depend on Go's map order. It is safe for concurrent use.
type Keyer struct {
	exprs []string
	paths []*jpath.Template // strict: a missing field is an error
}

// NewKeyer compiles index_by expressions; errs[i] is the error of exprs[i].
func NewKeyer(exprs []string) (*Keyer, []error) {
	k := &Keyer{}
	errs := make([]error, len(exprs))
	failed := false
	for i, e := range exprs {
		norm, err := NormalizePath(e)
		if err == nil {
			_, err = parsePath(norm)
		}
		if err != nil {
			errs[i], failed = err, true
			continue
		}
		t, err := jpath.Parse(norm)
		if err != nil {
			errs[i], failed = err, true
			continue
		}
		k.exprs = append(k.exprs, norm)
		k.paths = append(k.paths, t.Strict())
	}
	if !failed {
		errs = nil
	}
	return k, errs
}

// DecodeIndexBy reads and compiles index_by; a bad expression is a
// diagnostic on its list element.
func DecodeIndexBy(c *schema.Content) (*Keyer, hcl.Diagnostics) {
	exprs, rng, diags := IndexByAttr.Get(c)
	if diags.HasErrors() {
		return &Keyer{}, diags
	}
	k, errs := NewKeyer(exprs)
	ranges := listElemRanges(c, IndexByAttr.Name(), len(exprs), rng)
	for i, err := range errs {
		if err != nil {
			diags = append(diags, pathDiag("Invalid index_by path", "index_by", exprs[i], err, ranges[i]))
		}
	}
	return k, diags
}

// Exprs returns the normalized expressions (empty for the default key).
func (k *Keyer) Exprs() []string { return append([]string(nil), k.exprs...) }

// Key returns the record key of obj. The error wraps ErrMissing when a path
// is absent or null.
func (k *Keyer) Key(obj map[string]any) (string, error) {
	if len(k.paths) == 0 {
		return DefaultKey(obj)
	}
	parts := make([]string, len(k.paths))
	for i, t := range k.paths {
		s, err := evalText(t, obj)
		if err != nil {
			return "", fmt.Errorf("%w: %s: %s", ErrMissing, k.exprs[i], err)
		}
		parts[i] = s
	}
	return strings.Join(parts, ":"), nil
}

// evalText is the text of the values t finds in obj, joined with ",";
// an error when it finds none (or only nulls).
func evalText(t *jpath.Template, obj map[string]any) (string, error) {
	results, err := t.FindResults(obj)
	if err != nil {
		return "", err
	}
	if len(results) == 1 && len(results[0]) == 1 { // one value: no join
		if s, ok := text(results[0][0]); ok {
			return s, nil
		}
		return "", errors.New("no value")
	}
	var parts []string
	for _, rs := range results {
		for _, v := range rs {
			if s, ok := text(v); ok {
				parts = append(parts, s)
			}
		}
	}
	if len(parts) == 0 {
		return "", errors.New("no value")
	}
	return strings.Join(parts, ","), nil
}

// text is a value's part of a key: a string as it is, null as nothing,
// anything else as JSON.
func text(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		return x, true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v), true
	}
	return string(b), true
}

// DefaultKey returns namespace/name, or name when the object has no
// namespace.
func DefaultKey(obj map[string]any) (string, error) {
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	if name == "" {
		return "", fmt.Errorf("%w: metadata.name", ErrMissing)
	}
	if ns, _ := md["namespace"].(string); ns != "" {
		return ns + "/" + name, nil
	}
	return name, nil
}
