package files

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/ctyconv"
	"github.com/pipeline/pipeline/internal/fastexpr"
)

// packedJSON is a record value at rest: the compact JSON of the decoded
// object or item it stands for (node.Packed). The source and its output
// keep it so, and a consumer receives the cty value built from it. A cty
// object carries a type map and an attribute map at every level, which
// for a small Kubernetes object is about 25 times its JSON
// (docs/performance.md, F1).
type packedJSON []byte

var _ fastexpr.Fields = packedJSON(nil) // extract reads fields without building the object

// packed returns the record value of x, a value decoded from JSON or YAML
// (maps, slices, strings, numbers, booleans, nil): packed when it is an
// object or an array, else converted. Decoding the JSON again yields
// values of the same Go types, so the built value equals what converting
// x gives.
func packed(x any) (cty.Value, error) {
	switch x.(type) {
	case map[string]any, []any:
		if b, err := json.Marshal(x); err == nil {
			return node.PackedVal(packedJSON(b)), nil
		}
	}
	return ctyconv.ToCty(x) // a scalar, or what JSON cannot hold: converting says why
}

// Value implements node.Packed. It reads p straight into cty values,
// those that decoding it (utiljson) and converting the result
// (ctyconv.ToCty) give, without the maps of the decoded form: extract
// builds every record it evaluates, and those maps were about a third of
// what that allocated (docs/performance.md, F1).
func (p packedJSON) Value() cty.Value {
	r := jsonReader{b: p}
	if v, ok := r.value(); ok && r.i == len(p) {
		return v
	}
	return cty.NullVal(cty.DynamicPseudoType) // not reached: p was marshalled from such a value
}

// jsonReader reads the compact JSON that encoding/json writes.
type jsonReader struct {
	b []byte
	i int
}

// next consumes c if it is the next byte.
func (r *jsonReader) next(c byte) bool {
	if r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

func (r *jsonReader) value() (cty.Value, bool) {
	switch {
	case r.next('{'):
		if r.next('}') {
			return cty.EmptyObjectVal, true
		}
		attrs := map[string]cty.Value{}
		for {
			k, ok := r.str()
			if !ok || !r.next(':') {
				return cty.NilVal, false
			}
			if attrs[k], ok = r.value(); !ok {
				return cty.NilVal, false
			}
			if r.next('}') {
				return cty.ObjectVal(attrs), true
			}
			if !r.next(',') {
				return cty.NilVal, false
			}
		}
	case r.next('['):
		if r.next(']') {
			return cty.EmptyTupleVal, true
		}
		var elems []cty.Value
		for {
			v, ok := r.value()
			if !ok {
				return cty.NilVal, false
			}
			elems = append(elems, v)
			if r.next(']') {
				return cty.TupleVal(elems), true
			}
			if !r.next(',') {
				return cty.NilVal, false
			}
		}
	case r.i < len(r.b) && r.b[r.i] == '"':
		s, ok := r.str()
		return cty.StringVal(s), ok
	case r.literal("true"):
		return cty.True, true
	case r.literal("false"):
		return cty.False, true
	case r.literal("null"):
		return cty.NullVal(cty.DynamicPseudoType), true
	}
	start := r.i
	for r.i < len(r.b) && strings.IndexByte("+-.0123456789Ee", r.b[r.i]) >= 0 {
		r.i++
	}
	v, err := ctyconv.Number(string(r.b[start:r.i])) // exact, as converting the decoded json.Number
	return v, err == nil && start < r.i
}

// literal consumes text if it comes next.
func (r *jsonReader) literal(text string) bool {
	if len(r.b)-r.i >= len(text) && string(r.b[r.i:r.i+len(text)]) == text {
		r.i += len(text)
		return true
	}
	return false
}

// str reads a string; one with escapes (rare) is decoded by encoding/json.
func (r *jsonReader) str() (string, bool) {
	raw, escaped, ok := r.rawStr()
	if !ok {
		return "", false
	}
	return unquote(raw, escaped)
}

// rawStr reads a string and returns it as written, quotes included only
// when it has escapes (for str to decode).
func (r *jsonReader) rawStr() (raw []byte, escaped, ok bool) {
	if !r.next('"') {
		return nil, false, false
	}
	start := r.i
	for ; r.i < len(r.b) && r.b[r.i] != '"'; r.i++ {
		if r.b[r.i] == '\\' {
			escaped = true
			r.i++
		}
	}
	if !r.next('"') {
		return nil, false, false
	}
	if escaped {
		return r.b[start-1 : r.i], true, true
	}
	return r.b[start : r.i-1], false, true
}

// Field answers extract's reads of a record's fields
// (`object.metadata.name`) from the JSON, building only the value at
// path, not the object around it (fastexpr.Fields): building the object
// was most of what extract allocated per record (docs/performance.md,
// F1). ok is false when an attribute on the way is absent or a step is
// not an object, or when an object on the way has a name that cty
// normalizes to another (the built object's names are in NFC); extract
// then builds the object.
func (p packedJSON) Field(path []string) (cty.Value, bool) {
	r := jsonReader{b: p}
	for _, name := range path {
		if !r.find(name) {
			return cty.NilVal, false
		}
	}
	return r.value()
}

// find moves r from the start of an object to the value of its attribute
// name; false when r is not at an object or it has no such attribute.
func (r *jsonReader) find(name string) bool {
	if !r.next('{') || r.next('}') {
		return false
	}
	for {
		raw, escaped, ok := r.rawStr()
		if !ok || !r.next(':') {
			return false
		}
		if !escaped && ascii(raw) {
			if string(raw) == name {
				return true
			}
		} else if k, ok := unquote(raw, escaped); !ok || cty.NormalizeString(k) != k {
			return false // the built object names it otherwise (cty.ObjectVal): extract builds it
		} else if k == name {
			return true
		}
		if !r.skip() || !r.next(',') {
			return false // the end of the object, or not JSON
		}
	}
}

// unquote is the text of a string rawStr read.
func unquote(raw []byte, escaped bool) (string, bool) {
	if !escaped {
		return string(raw), true
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err == nil
}

// ascii reports whether b is ASCII, which cty's normalization keeps as is.
func ascii(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// skip moves r past one value.
func (r *jsonReader) skip() bool {
	depth := 0
	for r.i < len(r.b) {
		switch c := r.b[r.i]; {
		case c == '"':
			if _, _, ok := r.rawStr(); !ok {
				return false
			}
		case c == '{' || c == '[':
			depth++
			r.i++
			continue
		case c == '}' || c == ']':
			if depth == 0 {
				return true // a number or literal ends where its container does
			}
			depth--
			r.i++
		case c == ',' && depth == 0:
			return true
		default:
			r.i++ // a byte of a number or literal
			continue
		}
		if depth == 0 {
			return true
		}
	}
	return depth == 0
}

// Same implements node.Packed: the JSON of equal values is equal, as
// encoding/json writes object keys sorted.
func (p packedJSON) Same(o node.Packed) bool {
	q, ok := o.(packedJSON)
	return ok && bytes.Equal(p, q)
}

var _ node.Packed = packedJSON(nil)
