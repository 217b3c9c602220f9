package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/pipeline/pipeline/engine/node"
)

// errSyntax reports malformed JSON found while projecting.
var errSyntax = errors.New("malformed JSON")

// projector decodes the projected paths of JSON objects and skips
// everything else without allocating it. Kept subtrees are decoded like
// client-go's unstructured objects, except that a number which is not an
// int64 stays a json.Number: its exact text, where client-go would round
// it to a float64.
type projector struct{ data []byte }

// seq walks the object or list at i (after white space), opening and
// closing being its brackets: for each element it calls elem with the
// element's index, which must return the index after the element. It
// returns the index after the closing bracket.
func (d projector) seq(i int, opening, closing byte, elem func(j int) (int, error)) (int, error) {
	i = d.ws(i)
	if i >= len(d.data) || d.data[i] != opening {
		return i, fmt.Errorf("%w: '%c' expected at byte %d", errSyntax, opening, i)
	}
	i = d.ws(i + 1)
	if i < len(d.data) && d.data[i] == closing {
		return i + 1, nil
	}
	for {
		j, err := elem(d.ws(i))
		if err != nil {
			return j, err
		}
		j = d.ws(j)
		if j >= len(d.data) {
			return j, fmt.Errorf("%w: unexpected end", errSyntax)
		}
		switch d.data[j] {
		case ',':
			i = j + 1
		case closing:
			return j + 1, nil
		default:
			return j, fmt.Errorf("%w: ',' or '%c' expected at byte %d", errSyntax, closing, j)
		}
	}
}

// members walks the object starting at i (after white space): for each
// member it calls member with the key and the index of the value, which
// must return the index after the value. It returns the index after the
// object.
func (d projector) members(i int, member func(key string, j int) (int, error)) (int, error) {
	return d.seq(i, '{', '}', func(j int) (int, error) {
		key, j, err := d.str(j)
		if err != nil {
			return j, err
		}
		j = d.ws(j)
		if j >= len(d.data) || d.data[j] != ':' {
			return j, fmt.Errorf("%w: ':' expected at byte %d", errSyntax, j)
		}
		return member(key, d.ws(j+1))
	})
}

// object decodes the object starting at i keeping only p's paths, and
// returns it with the index after it.
func (d projector) object(i int, p *node.Paths) (map[string]any, int, error) {
	out := map[string]any{}
	end, err := d.members(i, func(key string, j int) (int, error) {
		sub, ok := p.Field(key)
		if !ok {
			return d.skip(j)
		}
		var v any
		var err error
		if !sub.Whole() && j < len(d.data) && d.data[j] == '{' {
			v, j, err = d.object(j, sub)
		} else {
			v, j, err = d.value(j)
		}
		out[key] = v
		return j, err
	})
	if err != nil {
		return nil, end, err
	}
	return out, end, nil
}

// value decodes the whole value at i.
func (d projector) value(i int) (any, int, error) {
	if i < len(d.data) && d.data[i] == '"' { // the common leaf: a plain string
		if end, plain := d.plainString(i); plain {
			return string(d.data[i+1 : end]), end + 1, nil
		}
	}
	end, err := d.skip(i)
	if err != nil {
		return nil, end, err
	}
	v, err := exact(d.data[i:end])
	if err != nil {
		return nil, end, fmt.Errorf("decode value at byte %d: %w", i, err)
	}
	return v, end, nil
}

// exact decodes one JSON value with its numbers as int64 when they are
// integers in int64's range, else as their json.Number text.
func exact(data []byte) (any, error) {
	if c := data[0]; c == '-' || c >= '0' && c <= '9' { // the common leaf: a number
		if n, err := strconv.ParseInt(string(data), 10, 64); err == nil {
			return n, nil
		}
		if !json.Valid(data) {
			return nil, fmt.Errorf("%w: invalid number %q", errSyntax, data)
		}
		return json.Number(data), nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return integers(v), nil
}

// integers turns the json.Numbers in v that are int64s into int64s.
func integers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
	case map[string]any:
		for k, e := range x {
			x[k] = integers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = integers(e)
		}
	}
	return v
}

// str decodes the string at i.
func (d projector) str(i int) (string, int, error) {
	if i >= len(d.data) || d.data[i] != '"' {
		return "", i, fmt.Errorf("%w: string expected at byte %d", errSyntax, i)
	}
	if end, plain := d.plainString(i); plain {
		return string(d.data[i+1 : end]), end + 1, nil
	}
	v, end, err := d.value(i)
	if err != nil {
		return "", end, err
	}
	s, _ := v.(string)
	return s, end, nil
}

// plainString returns the index of the closing quote of the string at i
// and whether the string is plain: printable ASCII without escapes, its
// bytes its value. JSON decoding replaces invalid UTF-8 and refuses
// control characters, so any other string is left to the decoder.
func (d projector) plainString(i int) (int, bool) {
	for j := i + 1; j < len(d.data); j++ {
		switch c := d.data[j]; {
		case c == '"':
			return j, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return 0, false
		}
	}
	return 0, false
}

// skip returns the index after the value at i.
func (d projector) skip(i int) (int, error) {
	data := d.data
	if i >= len(data) {
		return i, fmt.Errorf("%w: value expected at end", errSyntax)
	}
	switch data[i] {
	case '"':
		return d.skipString(i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, err := d.skipString(j)
				if err != nil {
					return end, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return len(data), fmt.Errorf("%w: unterminated value at byte %d", errSyntax, i)
	}
	j := i
	for j < len(data) {
		c := data[j]
		if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\t' || c == '\r' {
			break
		}
		j++
	}
	if j == i {
		return j, fmt.Errorf("%w: value expected at byte %d", errSyntax, i)
	}
	return j, nil
}

func (d projector) skipString(i int) (int, error) {
	data := d.data
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '"':
			return j + 1, nil
		case '\\':
			j++
		}
	}
	return len(data), fmt.Errorf("%w: unterminated string at byte %d", errSyntax, i)
}

func (d projector) ws(i int) int {
	for i < len(d.data) {
		switch d.data[i] {
		case ' ', '\n', '\t', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// list decodes a List response keeping p's paths of each item: the list's
// own fields (apiVersion, kind, metadata) whole, and each item projected.
func (d projector) list(p *node.Paths) (head map[string]any, items []map[string]any, err error) {
	head = map[string]any{}
	_, err = d.members(0, func(key string, j int) (int, error) {
		if key == "items" {
			var err error
			items, j, err = d.items(j, p)
			return j, err
		}
		v, j, err := d.value(j)
		head[key] = v
		return j, err
	})
	if err != nil {
		return nil, nil, err
	}
	return head, items, nil
}

func (d projector) items(i int, p *node.Paths) ([]map[string]any, int, error) {
	if i < len(d.data) && d.data[i] == 'n' { // "items": null
		end, err := d.skip(i)
		return nil, end, err
	}
	var out []map[string]any
	end, err := d.seq(i, '[', ']', func(j int) (int, error) {
		obj, j, err := d.object(j, p)
		out = append(out, obj)
		return j, err
	})
	if err != nil {
		return nil, end, err
	}
	return out, end, nil
}
