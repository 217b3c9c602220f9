package schema

import (
	"math/big"
	"strconv"

	"github.com/zclconf/go-cty/cty"
)

// sensitiveMark is the type of SensitiveMark, unexported so that no other
// package can make a mark that compares equal to it.
type sensitiveMark struct{}

// SensitiveMark marks a value that must never be shown: the value of a
// variable declared sensitive, of an attribute declared Sensitive, and
// (because HCL and cty carry marks through operators, templates and
// functions) every value computed from one. A record derived from no
// sensitive input carries no mark and costs nothing extra.
//
// Views render values through Masked. A node that needs the raw value (a
// pin path, a subject, a map key, bytes for the kernel) unmarks it
// explicitly, and keeps it out of its error messages.
var SensitiveMark = sensitiveMark{}

// Mask is what a view shows in place of a sensitive value, whatever its
// length or spelling.
const Mask = "(sensitive)"

// MarkSensitive returns v marked sensitive.
func MarkSensitive(v cty.Value) cty.Value { return v.Mark(SensitiveMark) }

// IsSensitive reports whether v or any value inside it is marked sensitive.
func IsSensitive(v cty.Value) bool {
	if v == cty.NilVal {
		return false
	}
	if v.IsMarked() {
		return true
	}
	if v.Type().IsPrimitiveType() {
		return false // cheap on the hot path: a scalar holds nothing inside
	}
	return v.ContainsMarked()
}

// Masked returns v for a view: every part marked sensitive becomes the
// string Mask, and no mark is left. Collections holding a masked part
// become tuples or objects, so that their elements may differ in type. A
// value without marks is returned as it is, without copying.
func Masked(v cty.Value) cty.Value {
	if v == cty.NilVal || !IsSensitive(v) {
		return v
	}
	return masked(v)
}

func masked(v cty.Value) cty.Value {
	if v.IsMarked() {
		return cty.StringVal(Mask)
	}
	if !v.ContainsMarked() || v.IsNull() || !v.IsKnown() {
		return v
	}
	ty := v.Type()
	switch {
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType():
		elems := make([]cty.Value, 0, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			elems = append(elems, masked(e))
		}
		return cty.TupleVal(elems)
	case ty.IsMapType() || ty.IsObjectType():
		attrs := make(map[string]cty.Value, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			attrs[k.AsString()] = masked(e)
		}
		return cty.ObjectVal(attrs)
	}
	// A capsule or other value that holds marks inside: show none of it.
	return cty.StringVal(Mask)
}

// SensitiveStrings returns the raw text of every sensitive part of v: its
// strings and numbers, and the keys of its maps (object attribute names are
// the configuration's words, not secrets).
// They feed the string redaction that backs marks up in text no value
// reaches whole, such as an error naming a path built from a secret.
func SensitiveStrings(v cty.Value) []string {
	var out []string
	collectSensitive(v, false, &out)
	return out
}

func collectSensitive(v cty.Value, inside bool, out *[]string) {
	if v == cty.NilVal {
		return
	}
	if v.IsMarked() {
		inside = true
		v, _ = v.Unmark()
	} else if !inside && !v.ContainsMarked() {
		return
	}
	if v.IsNull() || !v.IsKnown() {
		return
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		if inside && v.AsString() != "" {
			*out = append(*out, v.AsString())
		}
	case ty == cty.Number:
		if inside {
			*out = append(*out, NumberText(v.AsBigFloat()))
		}
	case ty == cty.Bool:
		// true and false are too common to mask in text.
	case ty.IsCollectionType() || ty.IsTupleType() || ty.IsObjectType():
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			if inside && ty.IsMapType() && k.AsString() != "" {
				*out = append(*out, k.AsString())
			}
			collectSensitive(e, inside, out)
		}
	}
}

// NumberText writes a number as f.Text('f', -1) does, the text cty gives
// it. For an integer of magnitude up to 2^53 held with at least 53 bits,
// the shortest decimal that reads back as it is the integer itself, which
// strconv writes without big.Float's search: a list of 500,000 numbers
// took seconds of CPU in that search.
func NumberText(f *big.Float) string {
	if f.IsInt() && f.Prec() >= 53 {
		if i, acc := f.Int64(); acc == big.Exact && i >= -1<<53 && i <= 1<<53 && (i != 0 || !f.Signbit()) {
			return strconv.FormatInt(i, 10)
		}
	}
	return f.Text('f', -1)
}
