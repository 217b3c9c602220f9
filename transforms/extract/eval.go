package extract

import (
	"errors"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/fastexpr"
	"github.com/pipeline/pipeline/schema"
)

// yield is one record an object yields.
type yield struct {
	key   node.Key
	value cty.Value
}

// evaluator runs a transform's expressions for one object at a time. It
// reuses its evaluation contexts and scratch space between objects, so it
// belongs to one goroutine.
type evaluator struct {
	t *Transform
	// The transform's expressions with their fast paths (nil when absent).
	where, forEach, key, value *fastexpr.Expr
	objCtx                     *hcl.EvalContext // object in scope
	eachCtx                    *hcl.EvalContext // object and each in scope
	objVars                    map[string]cty.Value
	eachVars                   map[string]cty.Value
	pk                         packer // keeps the values yielded packed
	// obj is the object being evaluated as received; while lazy, "object"
	// is bound to its packed form's fields (fastexpr.Fields) and the
	// first expression the fast path cannot answer builds it.
	obj  cty.Value
	lazy bool
	out  []yield
	seen map[node.Key]int // scratch for de-duplicating large yields
	// skipped counts records skipped for a null or empty key.
	skipped int
}

func newEvaluator(t *Transform) *evaluator {
	e := &evaluator{t: t, objVars: map[string]cty.Value{}, eachVars: map[string]cty.Value{}, seen: map[node.Key]int{},
		where: fastexpr.Compile(t.where, t.ctx), forEach: fastexpr.Compile(t.forEach, t.ctx),
		key: fastexpr.Compile(t.key, t.ctx), value: fastexpr.Compile(t.value, t.ctx)}
	e.objCtx = t.ctx.NewChild()
	e.objCtx.Variables = e.objVars
	e.eachCtx = e.objCtx.NewChild()
	e.eachCtx.Variables = e.eachVars
	return e
}

// eval returns the records obj yields, unique by key (the last one wins).
// The slice is reused by the next call. An error means the object yields
// nothing.
func (e *evaluator) eval(k node.Key, obj cty.Value) (ys []yield, err error) {
	defer func() {
		e.obj = cty.NilVal
		if r := recover(); r != nil { // a function's bug must not stop the pipeline
			ys, err = nil, fmt.Errorf("expression panicked: %v", r)
		}
	}()
	e.out = e.out[:0]
	e.obj, e.lazy = obj, false
	if f := fields(obj); f != nil && !e.t.usesRecord {
		e.objVars["object"], e.lazy = fastexpr.FieldsVal(f), true
	} else {
		e.objVars["object"] = node.Unpack(obj)
	}
	if e.t.usesRecord {
		e.objVars["record"] = cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(k), "value": e.objVars["object"]})
	}
	if e.where != nil {
		ok, err := evalBool(e.valueOf(e.where, e.objCtx))
		if err != nil || !ok {
			return nil, err
		}
	}
	if e.forEach == nil {
		if err := e.record(e.objCtx); err != nil {
			return nil, err
		}
		return e.out, nil
	}
	coll, diags := e.valueOf(e.forEach, e.objCtx)
	if diags.HasErrors() {
		return nil, diags
	}
	// Iterating needs the collection unmarked; its marks go on to each
	// element, so values computed from a sensitive collection stay masked.
	coll, marks := coll.Unmark()
	if coll.IsNull() {
		return nil, nil
	}
	if !coll.IsKnown() || !coll.CanIterateElements() {
		return nil, fmt.Errorf("for_each must be a list, set, map or object, not %s", coll.Type().FriendlyName())
	}
	for it := coll.ElementIterator(); it.Next(); {
		k, v := it.Element()
		if len(marks) > 0 {
			k, v = k.WithMarks(marks), v.WithMarks(marks)
		}
		e.eachVars["each"] = cty.ObjectVal(map[string]cty.Value{"key": k, "value": v})
		if err := e.record(e.eachCtx); err != nil {
			return nil, err
		}
	}
	return e.dedupe(), nil
}

// record evaluates key and value in ctx and appends the record.
func (e *evaluator) record(ctx *hcl.EvalContext) error {
	kv, diags := e.valueOf(e.key, ctx)
	if diags.HasErrors() {
		return diags
	}
	key, err := schema.RecordKey(kv)
	if errors.Is(err, schema.ErrNoKey) {
		e.skipped++
		return nil
	}
	if err != nil {
		return err
	}
	val := cty.EmptyObjectVal
	if e.value != nil {
		v, diags := e.valueOf(e.value, ctx)
		if diags.HasErrors() {
			return diags
		}
		if !v.IsWhollyKnown() {
			return errors.New("value is not known")
		}
		if err := schema.CheckNumbers(v); err != nil {
			return fmt.Errorf("value: %w", err)
		}
		val = e.pk.pack(v)
	}
	e.out = append(e.out, yield{key: key, value: val})
	return nil
}

// valueOf evaluates x in ctx. While the object is lazy, the fast path
// reads its packed fields; where it cannot answer, the object is built
// and bound, and x evaluated as usual.
func (e *evaluator) valueOf(x *fastexpr.Expr, ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	if e.lazy {
		if v, ok := x.FastValue(ctx); ok {
			return v, nil
		}
		e.objVars["object"], e.lazy = node.Unpack(e.obj), false
	}
	return x.Value(ctx)
}

// fields returns the fields of obj's packed form when it can answer paths
// without being built (the kubernetes source's packed objects can), else
// nil.
func fields(obj cty.Value) fastexpr.Fields {
	if !node.IsPacked(obj) {
		return nil
	}
	f, _ := (*obj.EncapsulatedValue().(*node.Packed)).(fastexpr.Fields)
	return f
}

// dedupe keeps the last yield of every key, in first-seen order.
func (e *evaluator) dedupe() []yield {
	if len(e.out) < 2 {
		return e.out
	}
	clear(e.seen)
	n := 0
	for _, y := range e.out {
		if i, ok := e.seen[y.key]; ok {
			e.out[i].value = y.value
			continue
		}
		e.seen[y.key] = n
		e.out[n] = y
		n++
	}
	clear(e.out[n:]) // drop references to values
	e.out = e.out[:n]
	return e.out
}

// evalBool takes a condition's value; null is false.
func evalBool(v cty.Value, diags hcl.Diagnostics) (bool, error) {
	if diags.HasErrors() {
		return false, diags
	}
	v, _ = v.Unmark()
	if v.IsNull() {
		return false, nil
	}
	b, err := convert.Convert(v, cty.Bool)
	if err != nil || !b.IsKnown() {
		return false, fmt.Errorf("where must be a bool, not %s", v.Type().FriendlyName())
	}
	return b.True(), nil
}
