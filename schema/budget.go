package schema

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// The evaluation budget bounds what compile-time expressions may build, so
// that locals doubling a list forty times (a "billion laughs") end in a
// diagnostic instead of gigabytes. A value's size is its string bytes plus
// elementCost per element; one value (a function's result or a local) may
// reach MaxValueSize, and all of one load's values together MaxEvalSize.
const (
	MaxValueSize = 32 << 20
	MaxEvalSize  = 256 << 20
	elementCost  = 128
)

// budget counts the size of the values built by one configuration's
// expressions. It is shared by the functions of one EvalContext. Once
// sealed (the configuration is compiled), evaluations are per record at
// run time: each result is still bounded, their total no longer is, or a
// long run would exhaust it.
type budget struct {
	used   atomic.Int64
	sealed atomic.Bool
}

// charge adds a value's size, or says why it does not fit.
func (b *budget) charge(v cty.Value) error {
	n, ok, numErr := valueSize(v, MaxValueSize)
	if numErr != nil {
		return numErr
	}
	if !ok {
		return fmt.Errorf("the value is larger than the limit of %d MiB (string bytes plus %d bytes per element)", MaxValueSize>>20, elementCost)
	}
	if b.sealed.Load() {
		return nil
	}
	if used := b.used.Add(n); used > MaxEvalSize {
		return fmt.Errorf("the configuration's values together exceed the limit of %d MiB", MaxEvalSize>>20)
	}
	return nil
}

// valueSize measures v, stopping as soon as it exceeds limit or meets a
// number CheckNumber refuses (numErr).
func valueSize(v cty.Value, limit int64) (n int64, ok bool, numErr error) {
	var walk func(v cty.Value) bool
	walk = func(v cty.Value) bool {
		n += elementCost
		if n > limit {
			return false
		}
		if !v.IsKnown() || v.IsNull() {
			return true
		}
		v, _ = v.Unmark()
		ty := v.Type()
		switch {
		case ty == cty.String:
			n += int64(len(v.AsString()))
		case ty == cty.Number:
			if numErr = CheckNumber(v.AsBigFloat()); numErr != nil {
				return false
			}
		case ty.IsListType() || ty.IsSetType() || ty.IsTupleType() || ty.IsMapType() || ty.IsObjectType():
			for it := v.ElementIterator(); it.Next(); {
				k, e := it.Element()
				if ty.IsMapType() || ty.IsObjectType() {
					n += int64(len(k.AsString()))
				}
				if !walk(e) {
					return false
				}
			}
		}
		return n <= limit
	}
	ok = walk(v)
	return n, ok, numErr
}

// budgeted wraps a function so that its result is charged to b: a result
// over the budget is an error at the call. It also keeps sensitive values
// out of error messages: the wrapped function gets its arguments with their
// marks (cty unmarks them for an Impl and marks the result again), and
// when it fails on a sensitive argument its message, which may quote the
// argument (tonumber, cidrsubnet, file), is replaced.
func budgeted(f function.Function, b *budget) function.Function {
	params := f.Params()
	for i := range params {
		params[i].AllowMarked = true
	}
	varParam := f.VarParam()
	if varParam != nil {
		vp := *varParam
		vp.AllowMarked = true
		varParam = &vp
	}
	spec := &function.Spec{
		Description: f.Description(),
		Params:      params,
		VarParam:    varParam,
		Type: func(args []cty.Value) (cty.Type, error) {
			ty, err := f.ReturnTypeForValues(args)
			return ty, hideSensitive(err, args)
		},
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			v, err := f.Call(args)
			if err != nil {
				return v, hideSensitive(err, args)
			}
			if err := b.charge(v); err != nil {
				return cty.NilVal, err
			}
			return v, nil
		},
	}
	return function.New(spec)
}

// chargeLocal charges a local's value, which may have been built without a
// function (a template or a for expression); over the budget, the local
// fails with a diagnostic at its expression.
func (b *budget) chargeLocal(a *hcl.Attribute, v cty.Value) (cty.Value, hcl.Diagnostics) {
	if err := b.charge(v); err != nil {
		if _, _, numErr := valueSize(v, MaxValueSize); numErr != nil {
			return failed(cty.DynamicPseudoType), hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid number",
				Detail:  fmt.Sprintf("Local value %q holds a number that cannot be used: %s.", a.Name, numErr),
				Subject: a.Expr.Range().Ptr()}}
		}
		return failed(cty.DynamicPseudoType), hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Value too large",
			Detail:  fmt.Sprintf("Local value %q is too large: %s. Build smaller values, or read large data with a source.", a.Name, err),
			Subject: a.Expr.Range().Ptr()}}
	}
	return v, nil
}

// hideSensitive replaces the message of a function's error when one of its
// arguments is sensitive, keeping the argument it blames. Even a type error
// is hidden: parsers quote fragments of their input ("invalid character
// 'a'", "invalid escape sequence in \x"), which no text match can rule out.
func hideSensitive(err error, args []cty.Value) error {
	if err == nil {
		return nil
	}
	for i, a := range args {
		if !IsSensitive(a) {
			continue
		}
		var ae function.ArgError
		if errors.As(err, &ae) {
			i = ae.Index
		}
		return function.NewArgErrorf(i, "the call failed on a sensitive value, so the reason is not shown; check the values of the sensitive variables it uses")
	}
	return err
}
