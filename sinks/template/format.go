package template

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// maxFormatWidth bounds a width or precision in format and formatlist.
// Go's fmt gives up above a million and prints its error text instead of
// the value (`%!(NOVERB)`), and widths below that still cost their size
// per call: a template looping over thousands of records would allocate
// gigabytes of padding.
const maxFormatWidth = 4096

// formatVerb matches a verb's flags, width and precision (or "%%").
var formatVerb = regexp.MustCompile(`%%|%(?:\[\d+\])?[-+# 0]*(\d*)(?:\.(\d*))?`)

// boundedFormat is ctx with format and formatlist refusing a width or
// precision above maxFormatWidth: a render error, never Go's error text
// written into the file.
func boundedFormat(ctx *hcl.EvalContext) *hcl.EvalContext {
	if ctx == nil {
		ctx = &hcl.EvalContext{}
	}
	child := ctx.NewChild()
	child.Functions = map[string]function.Function{}
	for _, name := range []string{"format", "formatlist"} {
		if f, ok := lookupFunc(ctx, name); ok {
			child.Functions[name] = boundFormat(f)
		}
	}
	return child
}

func lookupFunc(ctx *hcl.EvalContext, name string) (function.Function, bool) {
	for c := ctx; c != nil; c = c.Parent() {
		if f, ok := c.Functions[name]; ok {
			return f, true
		}
	}
	return function.Function{}, false
}

// boundFormat wraps a format function (its first parameter the format
// string) with the width check.
func boundFormat(f function.Function) function.Function {
	spec := &function.Spec{
		Description: f.Description(),
		Params:      f.Params(),
		VarParam:    f.VarParam(),
		Type: func(args []cty.Value) (cty.Type, error) {
			return f.ReturnTypeForValues(args)
		},
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if len(args) == 0 {
				return f.Call(args)
			}
			if v, _ := args[0].UnmarkDeep(); v.IsKnown() && !v.IsNull() && v.Type() == cty.String {
				if err := checkWidths(v.AsString()); err != nil {
					return cty.NilVal, function.NewArgError(0, err)
				}
			}
			return f.Call(args)
		},
	}
	return function.New(spec)
}

func checkWidths(format string) error {
	for _, m := range formatVerb.FindAllStringSubmatch(format, -1) {
		for _, n := range m[1:] {
			if n == "" {
				continue
			}
			if w, err := strconv.Atoi(n); err != nil || w > maxFormatWidth {
				return fmt.Errorf("width or precision %s is larger than %d", n, maxFormatWidth)
			}
		}
	}
	return nil
}
