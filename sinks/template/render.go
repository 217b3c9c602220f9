package template

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/ctyconv"
	"github.com/pipeline/pipeline/schema"
)

// rendering is one render's outcome: the file's bytes and the raw text of
// every sensitive value they may hold, masked wherever the bytes are shown.
type rendering struct {
	data    []byte
	secrets []string
	// sensitive says the bytes may hold a sensitive value: a record's or
	// one of the configuration's sensitive variables.
	sensitive bool
}

// render evaluates the template over entries, which must be sorted by key.
func (s *Sink) render(entries []node.Entry) (rendering, error) {
	recs := make([]*record, len(entries))
	sensitive := false
	for i, e := range entries {
		recs[i] = s.newRecord(e)
		sensitive = sensitive || schema.IsSensitive(e.Value)
	}
	return s.renderRecords(recs, sensitive)
}

// record is an entry as the template sees it: its key, its { key, value }
// object, and the text of each record path the fast path reads (cells,
// index for index with Sink.fastPaths), computed once per change of the
// entry rather than once per render.
type record struct {
	key   string
	value cty.Value
	obj   cty.Value
	cells []cell
	// plain is obj without its marks, as a loop over records sees it
	// (stream.go); marked says obj has marks; known says it holds no
	// unknown value.
	plain         cty.Value
	marked, known bool
	// digest identifies plain, when the template keeps the passes of a
	// loop over records (cache.go); hashed says it was computed.
	digest digest
	hashed bool
	// line is the entry as the state file lists it, once encoded
	// (state.go); nil until then.
	line *encoded
	// own is what the renders kept of the record, by loop slot (cache.go);
	// nil until a render kept something.
	own []own
}

func (s *Sink) newRecord(e node.Entry) *record {
	r := &record{key: string(e.Key), value: e.Value, obj: recordObject(e)}
	r.plain, r.marked, r.known = r.obj, r.obj.ContainsMarked(), r.obj.IsWhollyKnown()
	if r.marked {
		r.plain, _ = r.obj.UnmarkDeep()
	}
	if s.reuse != nil && s.reuse.digests {
		var d digester
		if r.hashed = d.value(r.plain); r.hashed {
			r.digest = d.sum()
		}
	}
	if len(s.fastPaths) > 0 {
		r.cells = make([]cell, len(s.fastPaths))
		var buf bytes.Buffer
		for i, path := range s.fastPaths {
			buf.Reset()
			if v, ok := walkPath(e.Value, path); ok && writeValue(&buf, v) {
				r.cells[i] = cell{text: buf.String(), ok: true}
			}
		}
	}
	return r
}

// recordObject is an entry as the template sees it: { key, value }.
func recordObject(e node.Entry) cty.Value {
	v := e.Value
	if v == cty.NilVal {
		v = cty.NullVal(cty.DynamicPseudoType)
	}
	return cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(string(e.Key)), "value": v})
}

// renderRecords evaluates the template over records (sorted by key;
// sensitive says whether any holds a sensitive value): through the fast path when it answers, else through HCL. An
// error names the template's file:line:col; it holds no value (HCL's
// diagnostics do not print values, and the caller redacts sensitive ones
// anyway).
func (s *Sink) renderRecords(recs []*record, sensitive bool) (rendering, error) {
	var out rendering
	for _, r := range recs {
		if !sensitive {
			break
		}
		if schema.IsSensitive(r.value) {
			out.secrets = append(out.secrets, schema.SensitiveStrings(r.value)...)
		}
	}
	budget := &renderBudget{left: 2 * s.maxSize}
	ctx := s.ctx.NewChild()
	ctx.Variables = map[string]cty.Value{budgetVar: cty.CapsuleVal(budgetType, budget)}
	ctx.Functions = budgetFuncs(s.ctx, budget)
	if s.reuse == nil || s.reuse.readsRecords || s.fast != nil {
		setRecords(ctx, recs)
	}
	if s.fast != nil && len(out.secrets) == 0 {
		buf := bytes.NewBuffer(make([]byte, 0, min(s.sizeHint.Load(), s.maxSize)))
		env := &fastEnv{recs: recs, slot: make([]int, s.fastSlots), limit: s.maxSize, budget: budget}
		ok := s.fast(buf, ctx, env)
		if env.over || budget.over || (ok && int64(buf.Len()) > s.maxSize) {
			return out, s.tooLarge()
		}
		if ok {
			out.data = buf.Bytes()
			s.sizeHint.Store(int64(len(out.data)))
			return out, nil
		}
	}
	data, ok, over := s.stream(recs, ctx)
	if over || budget.over {
		return out, s.tooLarge()
	}
	if ok {
		out.data = data
		return out, nil
	}
	setRecords(ctx, recs)
	v, diags := s.tmpl.Value(ctx)
	if budget.over {
		return out, s.tooLarge()
	}
	if diags.HasErrors() {
		return out, fmt.Errorf("render: %s", diagText(diags))
	}
	v, _ = v.UnmarkDeep()
	if v.IsNull() || !v.IsKnown() {
		return out, fmt.Errorf("render: the template gave no text")
	}
	sv, err := convertString(v)
	if err != nil {
		return out, fmt.Errorf("render: %w", err)
	}
	if int64(len(sv)) > s.maxSize {
		return out, s.tooLarge()
	}
	out.data = []byte(sv)
	return out, nil
}

// setRecords sets the records variable of a render's context (ctx), the
// records as a tuple of their { key, value } objects, unless it is set:
// a render whose template reads records only where the streamer walks
// them in Go builds it only when it leaves one of those to HCL.
func setRecords(ctx *hcl.EvalContext, recs []*record) {
	if _, ok := ctx.Variables["records"]; ok {
		return
	}
	records := cty.EmptyTupleVal
	if len(recs) > 0 {
		objs := make([]cty.Value, len(recs))
		for i, r := range recs {
			objs[i] = r.obj
		}
		records = cty.TupleVal(objs)
	}
	ctx.Variables["records"] = records
}

// stream renders the template with the streamer (stream.go), reusing the
// passes kept from the last render that completed (cache.go).
func (s *Sink) stream(recs []*record, ctx *hcl.EvalContext) (data []byte, ok, over bool) {
	st := &streamer{limit: s.maxSize, budget: budgetOf(ctx), recs: recs, base: s.ctx, root: ctx}
	st.buf.Grow(int(min(s.sizeHint.Load(), s.maxSize)))
	if s.reuse != nil {
		st.loops, st.slots, st.cache = s.reuse.loops, s.reuse.slots, s.reuse.take()
		defer s.reuse.give(st.cache)
	}
	data, ok, over = st.render(s.tmpl, ctx)
	if ok {
		s.sizeHint.Store(int64(len(data)))
	}
	if ok && st.cache != nil {
		st.cache.done()
	}
	return data, ok, over
}

// errTooLarge is a render that grew past max_size.
var errTooLarge = errors.New("render too large")

func (s *Sink) tooLarge() error {
	return fmt.Errorf("%w: more than max_size (%d bytes), or values on the way more than twice that", errTooLarge, s.maxSize)
}

func convertString(v cty.Value) (string, error) {
	if v.Type() != cty.String {
		return "", fmt.Errorf("the template gave a %s, not text", v.Type().FriendlyName())
	}
	return v.AsString(), nil
}

// diagText is the errors of diags, each with its template position.
func diagText(diags hcl.Diagnostics) string {
	var parts []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		if d.Subject != nil {
			msg = fmt.Sprintf("%s:%d:%d: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, msg)
		}
		parts = append(parts, msg)
	}
	return strings.Join(parts, "; ")
}

// showValue is a value as plan and explain print it.
func showValue(v cty.Value) string {
	if v == cty.NilVal {
		return "null"
	}
	return ctyconv.String(schema.Masked(v))
}

// Render implements node.Renderer: the file entries render to.
func (s *Sink) Render(entries []node.Entry) ([]byte, error) {
	r, err := s.render(entries)
	return r.data, err
}
