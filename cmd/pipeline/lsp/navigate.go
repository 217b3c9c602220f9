package lsp

import (
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"go.lsp.dev/protocol"
)

func location(f *parsed, r hcl.Range) protocol.Location {
	return protocol.Location{URI: fileURI(f.name), Range: f.text.rangeOf(r)}
}

// definition returns where the reference under off is declared.
func definition(w *workspace, f *parsed, off int) []protocol.Location {
	target, _, ok := stepLabelAt(f, off)
	if !ok {
		var r ref
		if r, ok = refAt(f, off); !ok {
			return nil
		}
		target = r.target
	}
	d := w.decls[target]
	if d == nil {
		return nil
	}
	return []protocol.Location{location(d.file, d.rng())}
}

// stepLabelAt returns the address a config test's given or expect block
// names when off is on its label, with the label's range.
func stepLabelAt(f *parsed, off int) (string, hcl.Range, bool) {
	if !isTestFile(f.name) {
		return "", hcl.Range{}, false
	}
	for _, t := range f.body.Blocks {
		if !within(t.Range(), off) {
			continue
		}
		for _, b := range t.Body.Blocks {
			if (b.Type == "given" || b.Type == "expect") && len(b.Labels) == 1 && within(b.LabelRanges[0], off) {
				return b.Labels[0], b.LabelRanges[0], true
			}
		}
	}
	return "", hcl.Range{}, false
}

// references returns every reference to what is under off: a reference
// or a declaration's name.
func references(w *workspace, f *parsed, off int, withDecl bool) []protocol.Location {
	key, ok := w.declAt(f, off)
	if !ok {
		r, ok := refAt(f, off)
		if !ok {
			return nil
		}
		key = r.target
	}
	var out []protocol.Location
	if d := w.decls[key]; d != nil && withDecl {
		out = append(out, location(d.file, d.name))
	}
	for _, f := range w.files {
		for _, r := range f.refs() {
			if r.target == key {
				out = append(out, location(r.file, r.rng))
			}
		}
	}
	return out
}

// symbols is the outline of a file: its blocks, their attributes and
// nested blocks.
func symbols(f *parsed) []protocol.DocumentSymbol {
	return bodySymbols(f, f.body, "")
}

func bodySymbols(f *parsed, body *hclsyntax.Body, parent string) []protocol.DocumentSymbol {
	top := parent == ""
	var out []protocol.DocumentSymbol
	for _, a := range body.Attributes {
		kind := protocol.SymbolKindProperty
		if parent == "locals" {
			kind = protocol.SymbolKindConstant
		}
		out = append(out, protocol.DocumentSymbol{Name: a.Name, Kind: kind,
			Range: f.text.rangeOf(a.SrcRange), SelectionRange: f.text.rangeOf(a.NameRange)})
	}
	for _, b := range body.Blocks {
		name, kind := b.Type, protocol.SymbolKindStruct
		switch {
		case top && isNodeKind(b.Type) && len(b.Labels) == 2:
			name, kind = b.Type+"."+b.Labels[0]+"."+b.Labels[1], protocol.SymbolKindClass
		case top && b.Type == "variable" && len(b.Labels) == 1:
			name, kind = "var."+b.Labels[0], protocol.SymbolKindVariable
		case top && b.Type == "locals":
			kind = protocol.SymbolKindNamespace
		case len(b.Labels) > 0:
			name += " " + strings.Join(b.Labels, " ")
		}
		sel := b.TypeRange
		if len(b.LabelRanges) > 0 {
			sel = b.LabelRanges[len(b.LabelRanges)-1]
		}
		out = append(out, protocol.DocumentSymbol{Name: name, Kind: kind, Range: f.text.rangeOf(b.Range()),
			SelectionRange: f.text.rangeOf(sel), Children: bodySymbols(f, b.Body, b.Type)})
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Range.Start, out[j].Range.Start
		return a.Line < b.Line || a.Line == b.Line && a.Character < b.Character
	})
	return out
}
