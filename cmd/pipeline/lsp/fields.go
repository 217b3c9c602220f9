package lsp

import (
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// fields returns the names that may follow parts (record.value, object.
// metadata …) in the node the cursor is in, as far as its input tells.
func (s *Server) fields(w *workspace, c cursor, spec *node.Spec, parts []string) []string {
	switch parts[0] {
	case "each":
		if len(parts) == 1 {
			return []string{"key", "value"}
		}
		return nil
	case "record":
		if len(parts) == 1 {
			return []string{"key", "value"}
		}
		if parts[1] != "value" {
			return nil
		}
	case "item": // an item the source the cursor is in reads (source "files")
		if len(c.frames) > 0 && len(c.frames[0].labels) == 2 {
			return s.builtFields(w, c.frames[0].name+"."+c.frames[0].labels[0]+"."+c.frames[0].labels[1], parts[1:])
		}
		return nil
	}
	up := s.upstream(w, c)
	if up == nil {
		return nil
	}
	typ := up.block.Labels[0]
	addr := up.block.Type + "." + typ + "." + up.block.Labels[1]
	switch {
	case parts[0] == "object":
		return s.builtFields(w, addr, parts[1:])
	case parts[0] == "record" && typ == "extract":
		return objectKeys(attrExpr(up.block, "value"), parts[2:])
	case parts[0] == "record" && typ == "static":
		if rs, ok := attrExpr(up.block, "records").(*hclsyntax.ObjectConsExpr); ok && len(rs.Items) > 0 {
			return objectKeys(rs.Items[0].ValueExpr, parts[2:])
		}
	case parts[0] == "record": // a source whose records' values are its items (source "files")
		return s.builtFields(w, addr, parts[2:])
	}
	return nil
}

// builtFields asks the node at addr, as the last check built it, which
// fields its objects or items hold under path (node.FieldLister).
func (s *Server) builtFields(w *workspace, addr string, path []string) []string {
	s.mu.Lock()
	n := s.built[w.dir][addr]
	s.mu.Unlock()
	if fl, ok := n.(node.FieldLister); ok {
		return fl.ObjectFields(path)
	}
	return nil
}

// upstream follows the input of the node the cursor is in, through
// transforms that pass their input on unchanged, to the node whose
// records it reads.
func (s *Server) upstream(w *workspace, c cursor) *decl {
	if len(c.frames) == 0 || len(c.frames[0].labels) < 2 || !isNodeKind(c.frames[0].name) {
		return nil
	}
	d := w.decls[c.frames[0].name+"."+c.frames[0].labels[0]+"."+c.frames[0].labels[1]]
	for range 32 { // bounded: a cycle is validate's error, not a hang here
		if d == nil || d.block == nil {
			return nil
		}
		st, ok := attrExpr(d.block, "input").(*hclsyntax.ScopeTraversalExpr)
		if !ok {
			return nil
		}
		key, _, ok := refTarget(st.Traversal)
		if !ok || w.decls[key] == nil || w.decls[key].block == nil || len(w.decls[key].block.Labels) < 2 {
			return nil
		}
		d = w.decls[key]
		sp, ok := s.opts.Registry.Lookup(schema.Kind(d.block.Type), d.block.Labels[0])
		if !ok || sp.Output != node.SameAsInput {
			return d
		}
	}
	return nil
}

func attrExpr(b *hclsyntax.Block, name string) hclsyntax.Expression {
	if a, ok := b.Body.Attributes[name]; ok {
		return a.Expr
	}
	return nil
}

// objectKeys returns the keys of an object constructor, after descending
// path through its nested constructors.
func objectKeys(e hclsyntax.Expression, path []string) []string {
	obj, ok := e.(*hclsyntax.ObjectConsExpr)
	if !ok {
		return nil
	}
	var out []string
	for _, item := range obj.Items {
		k, d := item.KeyExpr.Value(nil)
		if d.HasErrors() || !k.IsKnown() || k.IsNull() || k.Type() != cty.String {
			continue
		}
		if len(path) > 0 {
			if k.AsString() == path[0] {
				return objectKeys(item.ValueExpr, path[1:])
			}
			continue
		}
		out = append(out, k.AsString())
	}
	return out
}

// blockText is a declaration's source text, for hover and completion docs.
func blockText(d *decl) string {
	if d == nil {
		return ""
	}
	r := d.rng()
	src := d.file.text.src
	if r.Start.Byte < 0 || r.End.Byte > len(src) || r.Start.Byte > r.End.Byte {
		return ""
	}
	lines := strings.Split(string(src[r.Start.Byte:r.End.Byte]), "\n")
	if len(lines) > 12 {
		lines = append(lines[:12], "  …")
	}
	return "```hcl\n" + strings.Join(lines, "\n") + "\n```\n" + posText(d.file.name, r.Start)
}

func posText(name string, p hcl.Pos) string {
	return name + ":" + itoa(p.Line) + ":" + itoa(p.Column)
}
