package ebpfmap

import (
	"fmt"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/fastexpr"
	"github.com/pipeline/pipeline/schema"
)

var (
	colType = schema.String("type").Required().
		Doc("Encoding: " + strings.Join(scalarTypes, ", ") + ". See the encodings table.").Example(`"ipv4"`)
	colFrom = schema.Expr("from", "record").
		Doc("Expression over `record` (record.key, record.value) giving the value to encode, or a constant. The key defaults to record.key; a value and every struct field need one.").
		Example("record.value.network_id")
	colOrder = schema.Enum("byte_order", "host", "be", "le").Default("host", `"host"`).
			Doc("Byte order of u16, u32 and u64: host (the kernel's, what a BPF program reads natively), be (network order) or le.")
	fieldBlk = schema.Nested("field", schema.Block{Attrs: []schema.Attribute{colType, colFrom, colOrder}}).
			Repeated().WithLabels("name").WithDoc("A field of a struct, in C declaration order; laid out with C alignment and padding.")
	columnBody = schema.Block{Attrs: []schema.Attribute{colType, colFrom, colOrder}, Blocks: []*schema.BlockType{fieldBlk}}
)

// column is a declared key or value: its encoding and the expressions that
// produce it from a record.
type column struct {
	enc    *encoding
	from   hcl.Expression   // scalar
	fields []hcl.Expression // struct, parallel to enc.fields
	rng    hcl.Range        // of its type attribute, for diagnostics
	// exprs holds from (scalar) or fields (struct) as encodeInto
	// evaluates them.
	exprs []colExpr
}

// colExpr is one expression a column encodes, with the shortcuts Prepare
// takes for every record: a constant is evaluated once, record.key needs
// no record object, anything else goes through its fast path.
type colExpr struct {
	expr      *fastexpr.Expr
	constant  cty.Value // cty.NilVal unless it reads no variable and evaluated cleanly
	recordKey bool
}

func newColExpr(e hcl.Expression, ctx *hcl.EvalContext) colExpr {
	x := colExpr{expr: fastexpr.Compile(e, ctx)}
	if st, ok := e.(*hclsyntax.ScopeTraversalExpr); ok && len(st.Traversal) == 2 && st.Traversal.RootName() == "record" {
		if a, ok := st.Traversal[1].(hcl.TraverseAttr); ok && a.Name == "key" {
			x.recordKey = true
			return x
		}
	}
	if len(e.Variables()) == 0 {
		if v, diags := e.Value(ctx); !diags.HasErrors() && v.IsWhollyKnown() {
			x.constant = v
		}
	}
	return x
}

// value evaluates the expression for rec; ctx builds the context with
// record set, called only when the expression needs it.
func (x colExpr) value(rec node.Record, ctx func() *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	switch {
	case x.recordKey:
		return cty.StringVal(rec.Key), nil
	case x.constant != cty.NilVal:
		return x.constant, nil
	}
	return x.expr.Value(ctx())
}

func decodeColumn(bt *schema.BlockType, c *schema.Content, diags *hcl.Diagnostics, isKey bool) (*column, bool) {
	blocks := bt.Get(c)
	if len(blocks) == 0 {
		return nil, false // reported as a missing block
	}
	bc := blocks[0]
	typ, trng, d := colType.Get(bc)
	*diags = append(*diags, d...)
	if typ != "struct" {
		enc, from, ok := decodeScalar(bc, typ, trng, diags)
		if !ok {
			return nil, false
		}
		if len(fieldBlk.Get(bc)) > 0 {
			*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Fields on a non-struct type",
				Detail: "field blocks apply only to type = \"struct\".", Subject: fieldBlk.Get(bc)[0].Range.Ptr()})
			return nil, false
		}
		if from == nil {
			if !isKey {
				*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing value source",
					Detail: "The value needs from = <expression over record or a constant>, such as from = 1.", Subject: bc.Range.Ptr()})
				return nil, false
			}
			from = recordKey()
		}
		return &column{enc: enc, from: from, rng: trng, exprs: []colExpr{newColExpr(from, c.Ctx)}}, true
	}
	col, ok := decodeStruct(bc, trng, diags)
	if ok {
		col.rng = trng
		for _, f := range col.fields {
			col.exprs = append(col.exprs, newColExpr(f, c.Ctx))
		}
	}
	return col, ok
}

// recordKey is parsed at its first use, not at every start of the program.
var recordKey = sync.OnceValue(func() hcl.Expression { return mustTraversal("record.key") })

func mustTraversal(s string) hcl.Expression {
	e, diags := hclsyntax.ParseExpression([]byte(s), "<default>", hcl.InitialPos)
	if diags.HasErrors() {
		panic(diags.Error())
	}
	return e
}

func decodeScalar(bc *schema.Content, typ string, trng hcl.Range, diags *hcl.Diagnostics) (*encoding, hcl.Expression, bool) {
	order, orng, d := colOrder.Get(bc)
	*diags = append(*diags, d...)
	if !colOrder.Has(bc) {
		order = ""
	}
	enc, err := parseScalar(typ, order)
	if err != nil {
		rng := trng
		if strings.HasPrefix(err.Error(), "byte_order") {
			rng = orng
		}
		*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid encoding", Detail: sentence(err.Error()), Subject: rng.Ptr()})
		return nil, nil, false
	}
	from, _, d := colFrom.Get(bc)
	*diags = append(*diags, d...)
	if !d.HasErrors() {
		d = checkConstant(enc, from, bc.Ctx)
		*diags = append(*diags, d...)
	}
	return enc, from, !d.HasErrors()
}

func decodeStruct(bc *schema.Content, trng hcl.Range, diags *hcl.Diagnostics) (*column, bool) {
	blocks := fieldBlk.Get(bc)
	if len(blocks) == 0 {
		*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Empty struct",
			Detail: "A struct needs at least one field \"NAME\" { type = ..., from = ... } block.", Subject: trng.Ptr()})
		return nil, false
	}
	var fields []field
	var exprs []hcl.Expression
	ok := true
	seen := map[string]bool{}
	for _, fb := range blocks {
		name := fb.Labels[0]
		if seen[name] {
			*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate struct field",
				Detail: fmt.Sprintf("The field %q is declared twice.", name), Subject: fb.LabelRanges[0].Ptr()})
			ok = false
		}
		seen[name] = true
		typ, frng, d := colType.Get(fb)
		*diags = append(*diags, d...)
		if typ == "struct" {
			*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Nested struct",
				Detail: "Struct fields must be scalar types.", Subject: frng.Ptr()})
			ok = false
			continue
		}
		enc, from, fok := decodeScalar(fb, typ, frng, diags)
		if !fok {
			ok = false
			continue
		}
		if from == nil {
			*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing field source",
				Detail: fmt.Sprintf("The field %q needs from = <expression over record or a constant>.", name), Subject: fb.Range.Ptr()})
			ok = false
			continue
		}
		fields = append(fields, field{name: name, enc: enc})
		exprs = append(exprs, from)
	}
	if !ok {
		return nil, false
	}
	return &column{enc: layoutStruct(fields), fields: exprs}, true
}

// encodeInto evaluates the column's expressions for rec (ctx gives the
// context where record is set) and encodes them into b, which is zeroed
// and len(b) == c.enc.size. sensitive reports whether a value encoded was
// computed from a secret.
func (c *column) encodeInto(rec node.Record, ctx func() *hcl.EvalContext, b []byte) (sensitive bool, err error) {
	if c.enc.name != "struct" {
		v, diags := c.exprs[0].value(rec, ctx)
		if diags.HasErrors() {
			return false, diags
		}
		return schema.IsSensitive(v), c.enc.encode(v, b)
	}
	for i, f := range c.enc.fields {
		v, diags := c.exprs[i].value(rec, ctx)
		if diags.HasErrors() {
			return false, fmt.Errorf("field %s: %w", f.name, diags)
		}
		sensitive = sensitive || schema.IsSensitive(v)
		if err := f.enc.encode(v, b[f.offset:f.offset+f.enc.size]); err != nil {
			return false, fmt.Errorf("field %s: %w", f.name, err)
		}
	}
	return sensitive, nil
}

// sentence ends msg with a full stop unless it ends with punctuation.
func sentence(msg string) string {
	if strings.HasSuffix(msg, ".") || strings.HasSuffix(msg, "?") {
		return msg
	}
	return msg + "."
}
