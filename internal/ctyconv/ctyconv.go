// Package ctyconv converts between decoded JSON/YAML values (map[string]any,
// []any, string, float64, int64, bool, nil — what unstructured Kubernetes
// objects hold) and cty values, the value type of records and expressions.
// Sources use ToCty to emit objects; transforms use FromCty to hand values to
// libraries such as client-go's jsonpath. It imports nothing of ours.
package ctyconv

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"
)

// ToCty converts a decoded JSON-like value. Maps become objects, slices
// become tuples (their elements may differ in type), nil becomes a dynamic
// null. Unsupported Go types are an error, never a panic.
func ToCty(v any) (cty.Value, error) {
	switch x := v.(type) {
	case nil:
		return cty.NullVal(cty.DynamicPseudoType), nil
	case string:
		return cty.StringVal(x), nil
	case bool:
		return cty.BoolVal(x), nil
	case int:
		return cty.NumberIntVal(int64(x)), nil
	case int32:
		return cty.NumberIntVal(int64(x)), nil
	case int64:
		return cty.NumberIntVal(x), nil
	case uint32:
		return cty.NumberUIntVal(uint64(x)), nil
	case uint64:
		return cty.NumberUIntVal(x), nil
	case float64:
		return cty.NumberFloatVal(x), nil
	case float32:
		return cty.NumberFloatVal(float64(x)), nil
	case json.Number:
		return Number(string(x))
	case map[string]any:
		if len(x) == 0 {
			return cty.EmptyObjectVal, nil
		}
		attrs := make(map[string]cty.Value, len(x))
		for k, e := range x {
			cv, err := ToCty(e)
			if err != nil {
				return cty.NilVal, fmt.Errorf("%s: %w", k, err)
			}
			attrs[k] = cv
		}
		return cty.ObjectVal(attrs), nil
	case []any:
		if len(x) == 0 {
			return cty.EmptyTupleVal, nil
		}
		elems := make([]cty.Value, len(x))
		for i, e := range x {
			cv, err := ToCty(e)
			if err != nil {
				return cty.NilVal, fmt.Errorf("[%d]: %w", i, err)
			}
			elems[i] = cv
		}
		return cty.TupleVal(elems), nil
	case []string:
		anys := make([]any, len(x))
		for i, s := range x {
			anys[i] = s
		}
		return ToCty(anys)
	case map[string]string:
		anys := make(map[string]any, len(x))
		for k, s := range x {
			anys[k] = s
		}
		return ToCty(anys)
	}
	return cty.NilVal, fmt.Errorf("unsupported value of Go type %T", v)
}

// Number converts the text of a JSON number exactly, as the configuration
// language reads a number literal: an integer that fits an int64 takes
// the cheap path, any other number is parsed with cty's own precision
// (cty.ParseNumberVal), never rounded to a float64 on the way.
//
// A fraction a float64 holds exactly (0.5, 0.25, 1.125: a decimal whose
// digits divide by 5 as often as it has decimals) takes a second cheap
// path: its float64 is the exact value, equal to what the exact parse
// gives.
func Number(text string) (cty.Value, error) {
	if !strings.ContainsAny(text, ".eE") { // no error value made on the common paths
		if i, err := strconv.ParseInt(text, 10, 64); err == nil {
			return cty.NumberIntVal(i), nil
		}
	} else if dyadic(text) {
		if f, err := strconv.ParseFloat(text, 64); err == nil {
			return cty.NumberFloatVal(f), nil
		}
	}
	return parseExact(strings.Clone(text)) // a copy: text itself does not escape, so a caller's conversion of bytes stays on its stack
}

func parseExact(text string) (cty.Value, error) {
	v, err := cty.ParseNumberVal(text)
	if err != nil {
		return cty.NilVal, fmt.Errorf("invalid number %q", text)
	}
	return v, nil
}

// pow5 holds 5^k for the decimals a dyadic fraction may have.
var pow5 = func() (p [19]int64) {
	p[0] = 1
	for k := 1; k < len(p); k++ {
		p[k] = p[k-1] * 5
	}
	return p
}()

// dyadic reports whether text, a decimal fraction without exponent of at
// most 18 digits, is m/2^k with m below 2^53: exactly a float64.
func dyadic(text string) bool {
	whole, frac, ok := strings.Cut(strings.TrimPrefix(text, "-"), ".")
	if !ok || len(whole)+len(frac) > 18 || frac == "" || whole == "" {
		return false
	}
	var m int64
	for _, part := range [2]string{whole, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return false
			}
			m = m*10 + int64(part[i]-'0')
		}
	}
	return m%pow5[len(frac)] == 0 && m/pow5[len(frac)] < 1<<53
}

// FromCty converts a cty value into JSON-like Go values. Unknown values
// become nil. Whole numbers in int64's range become int64, other numbers
// float64 when a float64 holds them exactly, else a json.Number of their
// exact text (2^64, 0.1 read from a file). It gives the raw
// value, marks dropped, for places that need it (a published value, a
// JSONPath); a view masks sensitive parts first (schema.Masked).
func FromCty(v cty.Value) any {
	out, _ := FromCtyMarked(v)
	return out
}

// FromCtyMarked is FromCty that also reports whether any part of v carried
// a mark (pipeline's only mark is the sensitive one), found on the same walk.
func FromCtyMarked(v cty.Value) (any, bool) {
	marked := false
	out := fromCty(v, &marked)
	return out, marked
}

func fromCty(v cty.Value, marked *bool) any {
	if v == cty.NilVal {
		return nil
	}
	if v.IsMarked() {
		*marked = true
		v, _ = v.Unmark()
	}
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		return v.AsString()
	case ty == cty.Bool:
		return v.True()
	case ty == cty.Number:
		bf := v.AsBigFloat()
		if bf.IsInt() && bf.MantExp(nil) <= 256 {
			if i, acc := bf.Int64(); acc == big.Exact {
				return i
			}
			return json.Number(bf.Text('f', 0)) // 2^64 as its digits
		}
		if f, acc := bf.Float64(); acc == big.Exact {
			return f
		}
		return json.Number(bf.Text('g', -1)) // exact where a float64 would round it
	case ty.IsObjectType() || ty.IsMapType():
		out := make(map[string]any, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			out[k.AsString()] = fromCty(e, marked)
		}
		return out
	case ty.IsListType() || ty.IsTupleType() || ty.IsSetType():
		out := make([]any, 0, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			out = append(out, fromCty(e, marked))
		}
		return out
	}
	return nil
}

// String renders a value compactly as JSON for logs and plan output; it
// never fails (unknown parts render as null).
func String(v cty.Value) string {
	b, err := json.Marshal(FromCty(v))
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}
