package schema

import (
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net/netip"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/customdecode"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/pipeline/pipeline/internal/regfile"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

func newEvalContext(dir string, environ []string) (*hcl.EvalContext, *budget) {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	b := &budget{}
	funcs := Functions(dir, env)
	for name, f := range funcs {
		if name != "try" && name != "can" { // they return a value built elsewhere
			funcs[name] = budgeted(f, b)
		}
	}
	return &hcl.EvalContext{Variables: map[string]cty.Value{}, Functions: funcs}, b
}

// Pure reports whether the function named gives the same result for the
// same arguments within one run, so that a caller may keep a result and
// skip evaluating again (the template sink's reuse of text, transform
// aggregate's incremental evaluation). file reads the disk, which may
// change; env reads the environment, fixed for a run. A function added to
// Functions must be added here (TestEveryFunctionClassified).
func Pure(name string) bool { return purity[name] }

var purity = map[string]bool{
	"file": false,
	"env":  true, "lower": true, "upper": true, "join": true, "split": true, "format": true,
	"formatlist": true, "jsonencode": true, "jsondecode": true, "trimspace": true, "replace": true,
	"regex": true, "substr": true, "length": true, "concat": true, "merge": true, "keys": true,
	"values": true, "lookup": true, "contains": true, "coalesce": true, "distinct": true,
	"flatten": true, "sort": true, "tostring": true, "tonumber": true, "tobool": true, "min": true,
	"max": true, "cidrsubnet": true, "cidrhost": true, "try": true, "can": true,
}

// Functions returns the functions available in every expression. dir is the
// base for relative file() paths and env backs env().
func Functions(dir string, env map[string]string) map[string]function.Function {
	return map[string]function.Function{
		"env":        envFunc(env),
		"file":       fileFunc(dir),
		"lower":      stdlib.LowerFunc,
		"upper":      stdlib.UpperFunc,
		"join":       stdlib.JoinFunc,
		"split":      stdlib.SplitFunc,
		"format":     stdlib.FormatFunc,
		"formatlist": stdlib.FormatListFunc,
		"jsonencode": stdlib.JSONEncodeFunc,
		"jsondecode": jsonDecodeFunc,
		"trimspace":  stdlib.TrimSpaceFunc,
		"replace":    replaceFunc,
		"regex":      stdlib.RegexFunc,
		"substr":     stdlib.SubstrFunc,
		"length":     lengthFunc,
		"concat":     stdlib.ConcatFunc,
		"merge":      stdlib.MergeFunc,
		"keys":       stdlib.KeysFunc,
		"values":     stdlib.ValuesFunc,
		"lookup":     stdlib.LookupFunc,
		"contains":   stdlib.ContainsFunc,
		"coalesce":   coalesceFunc,
		"distinct":   stdlib.DistinctFunc,
		"flatten":    stdlib.FlattenFunc,
		"sort":       stdlib.SortFunc,
		"tostring":   stdlib.MakeToFunc(cty.String),
		"tonumber":   toNumberFunc,
		"tobool":     stdlib.MakeToFunc(cty.Bool),
		"min":        stdlib.MinFunc,
		"max":        stdlib.MaxFunc,
		"cidrsubnet": cidrSubnetFunc,
		"cidrhost":   cidrHostFunc,
		"try":        tryfunc.TryFunc,
		"can":        canFunc,
	}
}

// canFunc is HCL's can, whose result is marked sensitive when its
// expression reads a sensitive value: whether a secret parses tells
// something about it.
var canFunc = function.New(&function.Spec{
	Description: "Evaluates an expression and returns whether it succeeded.",
	Params:      tryfunc.CanFunc.Params(),
	Type:        function.StaticReturnType(cty.Bool),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		v, err := tryfunc.CanFunc.Call(args)
		if err != nil {
			return v, err
		}
		if readsSensitive(customdecode.ExpressionClosureFromVal(args[0])) {
			v = MarkSensitive(v)
		}
		return v, nil
	},
})

// readsSensitive reports whether an expression reads a sensitive value.
func readsSensitive(c *customdecode.ExpressionClosure) bool {
	for _, tr := range c.Expression.Variables() {
		if v, diags := tr.TraverseAbs(c.EvalContext); !diags.HasErrors() && IsSensitive(v) {
			return true
		}
	}
	return false
}

func envFunc(env map[string]string) function.Function {
	return function.New(&function.Spec{
		Description: "Returns the value of an environment variable, or the empty string when it is unset.",
		Params:      []function.Parameter{{Name: "name", Type: cty.String}},
		VarParam:    &function.Parameter{Name: "default", Type: cty.String},
		Type:        function.StaticReturnType(cty.String),
		RefineResult: func(b *cty.RefinementBuilder) *cty.RefinementBuilder {
			return b.NotNull()
		},
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if v, ok := env[args[0].AsString()]; ok {
				return cty.StringVal(v), nil
			}
			if len(args) > 1 {
				return args[1], nil
			}
			return cty.StringVal(""), nil
		},
	})
}

func fileFunc(dir string) function.Function {
	return function.New(&function.Spec{
		Description: "Reads a file, relative to the configuration directory.",
		Params:      []function.Parameter{{Name: "path", Type: cty.String}},
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			p := args[0].AsString()
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			b, err := readConfigFile(p)
			if err != nil {
				return cty.NilVal, function.NewArgErrorf(0, "cannot read %s: %s", p, err)
			}
			return cty.StringVal(string(b)), nil
		},
	})
}

var cidrSubnetFunc = function.New(&function.Spec{
	Description: "Calculates a subnet address within a given IP network prefix: cidrsubnet(prefix, newbits, netnum).",
	Params: []function.Parameter{
		{Name: "prefix", Type: cty.String}, {Name: "newbits", Type: cty.Number}, {Name: "netnum", Type: cty.Number},
	},
	Type: function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		p, err := netip.ParsePrefix(args[0].AsString())
		if err != nil {
			return cty.NilVal, function.NewArgErrorf(0, "%q is not a CIDR prefix such as \"10.0.0.0/8\"", args[0].AsString())
		}
		newbits, err := smallInt(args[1], 0, 128)
		if err != nil {
			return cty.NilVal, function.NewArgError(1, err)
		}
		bits := p.Bits() + int(newbits)
		if bits > p.Addr().BitLen() {
			return cty.NilVal, function.NewArgErrorf(1, "%d bits added to /%d exceed the %d-bit address", newbits, p.Bits(), p.Addr().BitLen())
		}
		n, err := wholeNumber(args[2])
		if err != nil {
			return cty.NilVal, function.NewArgError(2, err)
		}
		if n.Sign() < 0 || n.BitLen() > int(newbits) {
			return cty.NilVal, function.NewArgErrorf(2, "network number %s does not fit in %d bits", n, newbits)
		}
		base := addrToInt(p.Masked().Addr())
		base.Or(base, new(big.Int).Lsh(n, uint(p.Addr().BitLen()-bits)))
		return cty.StringVal(netip.PrefixFrom(intToAddr(base, p.Addr().Is4()), bits).String()), nil
	},
})

var cidrHostFunc = function.New(&function.Spec{
	Description: "Calculates a full host IP address within a given IP network prefix: cidrhost(prefix, hostnum).",
	Params:      []function.Parameter{{Name: "prefix", Type: cty.String}, {Name: "hostnum", Type: cty.Number}},
	Type:        function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		p, err := netip.ParsePrefix(args[0].AsString())
		if err != nil {
			return cty.NilVal, function.NewArgErrorf(0, "%q is not a CIDR prefix such as \"10.0.0.0/8\"", args[0].AsString())
		}
		hostbits := p.Addr().BitLen() - p.Bits()
		h, err := wholeNumber(args[1])
		if err != nil {
			return cty.NilVal, function.NewArgError(1, err)
		}
		size := new(big.Int).Lsh(big.NewInt(1), uint(hostbits))
		if h.Sign() < 0 {
			h.Add(h, size)
		}
		if h.Sign() < 0 || h.Cmp(size) >= 0 {
			return cty.NilVal, function.NewArgErrorf(1, "host number %s does not fit in the %d host bits of %s", args[1].AsBigFloat().String(), hostbits, p)
		}
		base := addrToInt(p.Masked().Addr())
		base.Or(base, h)
		return cty.StringVal(intToAddr(base, p.Addr().Is4()).String()), nil
	},
})

// wholeNumber returns v as an integer; infinities and fractions are errors.
func wholeNumber(v cty.Value) (*big.Int, error) {
	bf := v.AsBigFloat()
	if bf.IsInf() || !bf.IsInt() {
		return nil, fmt.Errorf("must be a whole number, not %s", bf.Text('g', 10))
	}
	n, _ := bf.Int(nil)
	return n, nil
}

func smallInt(v cty.Value, lo, hi int64) (int64, error) {
	i, acc := v.AsBigFloat().Int64()
	if acc != big.Exact || i < lo || i > hi {
		return 0, fmt.Errorf("must be a whole number between %d and %d", lo, hi)
	}
	return i, nil
}

func addrToInt(a netip.Addr) *big.Int {
	b := a.AsSlice()
	return new(big.Int).SetBytes(b)
}

func intToAddr(n *big.Int, v4 bool) netip.Addr {
	size := 16
	if v4 {
		size = 4
	}
	buf := make([]byte, size)
	n.FillBytes(buf)
	a, _ := netip.AddrFromSlice(buf)
	return a
}

// maxFileSize bounds what file() and ca_cert read, so that a path such as
// /dev/zero cannot make validate run out of memory.
const maxFileSize = 16 << 20

// readConfigFile reads a regular file named by the configuration.
func readConfigFile(p string) ([]byte, error) {
	b, _, err := regfile.Read(p, maxFileSize)
	switch {
	case errors.Is(err, regfile.ErrNotRegular):
		return nil, errors.New("not a regular file")
	case errors.Is(err, regfile.ErrTooLarge):
		return nil, fmt.Errorf("larger than %d MiB", maxFileSize>>20)
	}
	return b, unwrapPathError(err)
}

// unwrapPathError drops the operation and path of a *fs.PathError, which
// the caller already names.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
