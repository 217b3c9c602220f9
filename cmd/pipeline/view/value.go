package view

import (
	"encoding/json"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/internal/redact"
)

// PlainValue converts v to encoding/json's data model for display. It
// never fails: a marked (sensitive) part is masked, an unknown one is null.
func PlainValue(v cty.Value, secrets *redact.Redactor) any {
	switch {
	case v == cty.NilVal:
		return nil
	case v.IsMarked(): // a sensitive value; any mark bound for a view counts as one
		return redact.Mask
	case !v.IsKnown() || v.IsNull():
		return nil
	}
	t := v.Type()
	switch {
	case t == cty.String:
		return secrets.String(v.AsString())
	case t == cty.Number:
		return json.Number(v.AsBigFloat().Text('g', -1))
	case t == cty.Bool:
		return v.True()
	case t.IsObjectType() || t.IsMapType():
		out := map[string]any{}
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			out[secrets.String(k.AsString())] = PlainValue(e, secrets)
		}
		return out
	case t.IsListType() || t.IsSetType() || t.IsTupleType():
		out := []any{}
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			out = append(out, PlainValue(e, secrets))
		}
		return out
	}
	return nil
}
