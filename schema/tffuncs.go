package schema

import (
	"errors"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// The functions of this file are named like Terraform's and behave like
// Terraform's, where the cty stdlib function of the same name does not:
// coalesce skips empty strings, length counts a string's characters, and
// replace treats a /pattern/ as a regular expression.

// coalesceFunc returns the first argument that is neither null nor an empty
// string, after converting all arguments to one type.
var coalesceFunc = function.New(&function.Spec{
	Description: "Returns the first argument that is not null and not an empty string.",
	VarParam: &function.Parameter{Name: "vals", Type: cty.DynamicPseudoType,
		AllowUnknown: true, AllowDynamicType: true, AllowNull: true},
	Type: func(args []cty.Value) (cty.Type, error) {
		types := make([]cty.Type, len(args))
		for i, v := range args {
			types[i] = v.Type()
		}
		t, _ := convert.UnifyUnsafe(types)
		if t == cty.NilType {
			return cty.NilType, errors.New("all arguments must have the same type")
		}
		return t, nil
	},
	Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
		for _, v := range args {
			v, err := convert.Convert(v, retType)
			if err != nil {
				return cty.NilVal, errors.New("all arguments must have the same type")
			}
			if !v.IsKnown() {
				return cty.UnknownVal(retType), nil
			}
			if v.IsNull() || (retType == cty.String && v.AsString() == "") {
				continue
			}
			return v, nil
		}
		return cty.NilVal, errors.New("no non-null, non-empty-string arguments")
	},
})

// lengthFunc is the length of a list, set, tuple, map or object, or the
// number of characters (grapheme clusters) of a string.
var lengthFunc = function.New(&function.Spec{
	Description: "Returns the number of elements of a collection, or of characters of a string.",
	Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType,
		AllowDynamicType: true, AllowUnknown: true}},
	Type: func(args []cty.Value) (cty.Type, error) {
		t := args[0].Type()
		if t == cty.String || t == cty.DynamicPseudoType || t.IsCollectionType() || t.IsTupleType() || t.IsObjectType() {
			return cty.Number, nil
		}
		return cty.Number, function.NewArgErrorf(0, "argument must be a string, a collection type, or a structural type")
	},
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		switch t := args[0].Type(); {
		case t == cty.String:
			return stdlib.Strlen(args[0])
		case t.IsObjectType():
			return cty.NumberIntVal(int64(len(t.AttributeTypes()))), nil
		}
		return stdlib.Length(args[0])
	},
})

// replaceFunc replaces every occurrence of a substring, or of every match
// of a regular expression when the substring is written /like this/.
var replaceFunc = function.New(&function.Spec{
	Description: "Replaces each occurrence of a substring, or each match of a /regular expression/, with a replacement.",
	Params: []function.Parameter{
		{Name: "str", Type: cty.String}, {Name: "substr", Type: cty.String}, {Name: "replace", Type: cty.String},
	},
	Type: function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		sub := args[1].AsString()
		if len(sub) > 1 && strings.HasPrefix(sub, "/") && strings.HasSuffix(sub, "/") {
			return stdlib.RegexReplace(args[0], cty.StringVal(sub[1:len(sub)-1]), args[2])
		}
		return stdlib.Replace(args[0], args[1], args[2])
	},
})
