package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/schema"
)

// errSlowPath sends a value appendJSON does not handle to cty's encoder.
var errSlowPath = errors.New("value for cty's JSON encoder")

// appendJSON appends what cty/json.Marshal(v, v.Type()) writes, byte for
// byte (fingerprints of a running process and of plan --against agree),
// but writes an integer of up to 2^53 with strconv instead of big.Float's
// shortest-decimal search, which dominated the fingerprint of a large
// records list. It returns errSlowPath for what it leaves to
// cty (capsules, values of a dynamic type inside a known one).
func appendJSON(b *bytes.Buffer, v cty.Value, t cty.Type) error {
	if v.IsMarked() || !v.IsKnown() || (t == cty.DynamicPseudoType && v.Type() != cty.DynamicPseudoType) {
		return errSlowPath
	}
	if v.IsNull() {
		b.WriteString("null")
		return nil
	}
	switch {
	case t == cty.String:
		s, err := json.Marshal(v.AsString())
		if err != nil {
			return err
		}
		b.Write(s)
	case t == cty.Number:
		if v.RawEquals(cty.PositiveInfinity) || v.RawEquals(cty.NegativeInfinity) {
			return errSlowPath // cty's error
		}
		b.WriteString(schema.NumberText(v.AsBigFloat())) // as big.Float.Text('f', -1) does
	case t == cty.Bool:
		b.WriteString(strconv.FormatBool(v.True()))
	case t.IsListType(), t.IsSetType(), t.IsTupleType():
		b.WriteByte('[')
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			_, ev := it.Element()
			var et cty.Type
			if t.IsTupleType() {
				et = t.TupleElementTypes()[i]
			} else {
				et = t.ElementType()
			}
			if err := appendJSON(b, ev, et); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case t.IsMapType():
		b.WriteByte('{')
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			ek, ev := it.Element()
			if err := appendJSON(b, ek, cty.String); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := appendJSON(b, ev, t.ElementType()); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case t.IsObjectType():
		atys := t.AttributeTypes()
		b.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(atys)) {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := appendJSON(b, cty.StringVal(k), cty.String); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := appendJSON(b, v.GetAttr(k), atys[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return errSlowPath
	}
	return nil
}
