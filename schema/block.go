package schema

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// Block is the schema of one block body: its attributes and nested blocks.
// The same value drives decoding, validation and the generated docs.
type Block struct {
	Attrs  []Attribute
	Blocks []*BlockType
}

// BlockType declares a nested block such as selector { ... }.
type BlockType struct {
	Name     string
	Labels   []string
	Doc      string
	Many     bool // the block may repeat
	Required bool
	Body     Block
}

// Nested declares a nested block that may appear at most once.
func Nested(name string, body Block) *BlockType { return &BlockType{Name: name, Body: body} }

// Repeated marks the nested block as repeatable.
func (bt *BlockType) Repeated() *BlockType { bt.Many = true; return bt }

// WithDoc sets the nested block's documentation.
func (bt *BlockType) WithDoc(s string) *BlockType { bt.Doc = s; return bt }

// WithLabels sets the nested block's label names.
func (bt *BlockType) WithLabels(names ...string) *BlockType { bt.Labels = names; return bt }

// Get returns the decoded nested blocks of this type, in source order.
func (bt *BlockType) Get(c *Content) []*Content { return c.Blocks[bt.Name] }

// Content is a decoded block body: raw attributes (read through handles),
// decoded nested blocks, the range of the whole block and the evaluation
// context for compile-time expressions.
type Content struct {
	Attrs       hcl.Attributes
	Blocks      map[string][]*Content
	Labels      []string
	LabelRanges []hcl.Range
	Range       hcl.Range // the block's declaration range (for "missing" errors)
	Ctx         *hcl.EvalContext
}

// HCL derives the hcl.BodySchema.
func (b Block) HCL() *hcl.BodySchema {
	s := &hcl.BodySchema{Attributes: make([]hcl.AttributeSchema, 0, len(b.Attrs)), Blocks: make([]hcl.BlockHeaderSchema, 0, len(b.Blocks))}
	for _, a := range b.Attrs {
		info := a.Info()
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: info.Name, Required: info.Required})
	}
	for _, bt := range b.Blocks {
		s.Blocks = append(s.Blocks, hcl.BlockHeaderSchema{Type: bt.Name, LabelNames: bt.Labels})
	}
	return s
}

// Attr returns the attribute declared with the given name, or nil.
func (b Block) Attr(name string) Attribute {
	for _, a := range b.Attrs {
		if a.Info().Name == name {
			return a
		}
	}
	return nil
}

// With returns a copy of b with extra attributes appended.
func (b Block) With(attrs ...Attribute) Block {
	out := Block{Attrs: append(append([]Attribute{}, b.Attrs...), attrs...), Blocks: b.Blocks}
	return out
}

// Decode decodes body against b. It always returns a Content (possibly
// partial) together with every diagnostic found.
func Decode(body hcl.Body, b Block, ctx *hcl.EvalContext, declRange hcl.Range) (*Content, hcl.Diagnostics) {
	raw, diags := body.Content(b.HCL())
	c := &Content{Attrs: raw.Attributes, Blocks: map[string][]*Content{}, Range: declRange, Ctx: ctx}
	if c.Attrs == nil {
		c.Attrs = hcl.Attributes{}
	}
	for _, bt := range b.Blocks {
		var first *hcl.Block
		for _, blk := range raw.Blocks.OfType(bt.Name) {
			if first != nil && !bt.Many {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError,
					Summary: fmt.Sprintf("Duplicate %s block", bt.Name),
					Detail:  fmt.Sprintf("Only one %s block is allowed here; the first one is at %s.", bt.Name, Pos(first.DefRange)),
					Subject: blk.DefRange.Ptr()})
				continue
			}
			if first == nil {
				first = blk
			}
			sub, d := Decode(blk.Body, bt.Body, ctx, blk.DefRange)
			sub.Labels, sub.LabelRanges = blk.Labels, blk.LabelRanges
			diags = append(diags, d...)
			c.Blocks[bt.Name] = append(c.Blocks[bt.Name], sub)
		}
		if first == nil && bt.Required {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError,
				Summary: fmt.Sprintf("Missing %s block", bt.Name),
				Detail:  fmt.Sprintf("A %s block is required here.", bt.Name),
				Subject: declRange.Ptr()})
		}
	}
	return c, diags
}

// Check reads every attribute of c (and of its nested blocks) through b's
// handles and returns all diagnostics. Types whose constructor has nothing
// more to check use it to validate a whole body.
func (b Block) Check(c *Content) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, a := range b.Attrs {
		diags = append(diags, a.Check(c)...)
	}
	for _, bt := range b.Blocks {
		for _, sub := range bt.Get(c) {
			diags = append(diags, bt.Body.Check(sub)...)
		}
	}
	return diags
}

// MustAppear marks the nested block as required.
func (bt *BlockType) MustAppear() *BlockType { bt.Required = true; return bt }
