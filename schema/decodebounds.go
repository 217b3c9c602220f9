package schema

import (
	"fmt"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// MaxDataDepth is how deep arrays and objects may nest in data a
// configuration or a source decodes (jsondecode, the files source). The
// decoders recurse once per level and a stack overflow is fatal, so
// deeper data is refused before decoding. Kubernetes objects stay below 30.
const MaxDataDepth = 512

// CheckDataDepth scans JSON (or YAML flow syntax) without recursing and
// says where brackets nest deeper than MaxDataDepth or a number is written
// with more than MaxNumberDigits characters, or returns nil. Quoted
// strings are skipped; YAML block nesting counts by indentation.
func CheckDataDepth(b []byte) error {
	depth, run := 0, 0
	line, col := 1, 0
	indent := true // the line so far is spaces and dashes
	var quote byte
	for i := 0; i < len(b); i++ {
		c := b[i]
		col++
		if c == '\n' {
			line, col, indent = line+1, 0, true
			if quote == '\'' {
				quote = 0 // an apostrophe in a YAML plain scalar quotes nothing
			}
		} else if c != ' ' && c != '-' {
			indent = false
		}
		if quote != 0 {
			switch {
			case c == '\\' && quote == '"':
				i++
			case c == quote:
				quote = 0
			}
			continue
		}
		if isNumberByte(c) {
			if run++; run > MaxNumberDigits {
				return fmt.Errorf("line %d: a number of more than %d characters", line, MaxNumberDigits)
			}
		} else {
			run = 0
		}
		switch c {
		case '"', '\'':
			quote = c
		case '[', '{':
			if depth++; depth > MaxDataDepth {
				return fmt.Errorf("line %d: arrays and objects nest more than %d levels deep", line, MaxDataDepth)
			}
		case ']', '}':
			depth = max(0, depth-1)
		case ' ', '-':
			// YAML nests blocks by indentation and "- " items.
			if indent && col > 2*MaxDataDepth {
				return fmt.Errorf("line %d: indented more than %d columns", line, 2*MaxDataDepth)
			}
		}
	}
	return nil
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// jsonDecodeFunc is stdlib's jsondecode, refusing data nested too deeply
// or numbers too long before decoding it.
var jsonDecodeFunc = function.New(&function.Spec{
	Description: stdlib.JSONDecodeFunc.Description(),
	Params:      stdlib.JSONDecodeFunc.Params(),
	Type: func(args []cty.Value) (cty.Type, error) {
		if args[0].IsKnown() && !args[0].IsNull() {
			if err := CheckDataDepth([]byte(args[0].AsString())); err != nil {
				return cty.NilType, function.NewArgErrorf(0, "cannot decode: %s", err)
			}
		}
		return stdlib.JSONDecodeFunc.ReturnTypeForValues(args)
	},
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) { return stdlib.JSONDecodeFunc.Call(args) },
})

// toNumberFunc is tonumber, refusing a string longer than any number may
// be before parsing it (a five-million-digit string takes minutes).
var toNumberFunc = function.New(&function.Spec{
	Description: "Converts a value to a number.",
	Params:      []function.Parameter{{Name: "v", Type: cty.DynamicPseudoType, AllowNull: true, AllowDynamicType: true}},
	Type: func(args []cty.Value) (cty.Type, error) {
		if v := args[0]; v.Type() == cty.String && v.IsKnown() && !v.IsNull() && len(v.AsString()) > MaxNumberDigits {
			return cty.NilType, function.NewArgErrorf(0, "a number of %d characters is longer than the limit of %d", len(v.AsString()), MaxNumberDigits)
		}
		return toNumber.ReturnTypeForValues(args)
	},
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) { return toNumber.Call(args) },
})

var toNumber = stdlib.MakeToFunc(cty.Number)
