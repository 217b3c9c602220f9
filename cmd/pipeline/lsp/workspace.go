package lsp

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/pipeline/pipeline/schema"
)

// parsed is one file parsed for navigation. The body is hclsyntax's
// partial result: a file with a syntax error still has the blocks before
// (and mostly after) the error, which is what an editor needs mid-edit.
type parsed struct {
	name string
	text *text
	body *hclsyntax.Body
	// spans are the ranges of the top-level blocks in text; only their
	// byte offsets are read (cursorAt).
	spans []hcl.Range
	// broken says the text did not parse: body holds what the parser
	// could read of it.
	broken bool
	// refList holds the references of body, found on first use (refs).
	refsOnce sync.Once
	refList  []ref
}

// decl is a declaration a reference can point at: a node or variable
// block, or one attribute of a locals block.
type decl struct {
	file  *parsed
	block *hclsyntax.Block     // node and variable declarations
	attr  *hclsyntax.Attribute // local values
	name  hcl.Range            // the name's range (label or attribute name)
}

// rng is the whole declaration.
func (d *decl) rng() hcl.Range {
	if d.block != nil {
		return d.block.Range()
	}
	return d.attr.SrcRange
}

// ref is one reference in an expression: node addresses (kind.type.name),
// var.NAME and local.NAME.
type ref struct {
	file   *parsed
	target string
	rng    hcl.Range // the referring part of the traversal
}

// workspace is a snapshot of one configuration directory: its files as the
// editor has them, with every declaration (the references are the files').
type workspace struct {
	dir   string
	files []*parsed
	decls map[string]*decl // "source.kubernetes.pods", "var.grace", "local.base"
}

// parse parses src, refusing input nested too deeply for the parser.
func parse(name string, src []byte) *parsed {
	p := &parsed{name: name, text: newText(src), body: &hclsyntax.Body{}, broken: true}
	if schema.CheckNesting(src, name).HasErrors() {
		return p
	}
	f, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	p.broken = diags.HasErrors()
	if f != nil {
		if b, ok := f.Body.(*hclsyntax.Body); ok {
			p.setBody(b)
		}
	}
	return p
}

func (p *parsed) setBody(b *hclsyntax.Body) {
	p.body = b
	p.spans = make([]hcl.Range, len(b.Blocks))
	for i, blk := range b.Blocks {
		p.spans[i] = blk.Range()
	}
}

// edited is p standing for src, a later text of the same file, without
// parsing it: the text is src, the body p's, and the spans those of p's
// top-level blocks outside the region that changed (from the first byte
// that differs to the last), moved to their offsets in src.
func (p *parsed) edited(src []byte) *parsed {
	old := p.text.src
	pre := 0
	for pre < len(old) && pre < len(src) && old[pre] == src[pre] {
		pre++
	}
	suf := 0
	for suf < len(old)-pre && suf < len(src)-pre && old[len(old)-1-suf] == src[len(src)-1-suf] {
		suf++
	}
	delta := len(src) - len(old)
	lines := bytes.Count(src[pre:len(src)-suf], []byte("\n")) - bytes.Count(old[pre:len(old)-suf], []byte("\n"))
	out := &parsed{name: p.name, text: newText(src), body: p.body}
	for _, r := range p.spans {
		switch {
		case r.End.Byte <= pre:
			out.spans = append(out.spans, r)
		case r.Start.Byte >= len(old)-suf:
			r.Start.Byte, r.End.Byte = r.Start.Byte+delta, r.End.Byte+delta
			r.Start.Line, r.End.Line = r.Start.Line+lines, r.End.Line+lines
			out.spans = append(out.spans, r)
		}
	}
	return out
}

// configNames lists the files of dir's configuration: its *.hcl files on
// disk and in open, plus extra (the file being edited, even a test file).
func configNames(dir string, open map[string][]byte, extra string) []string {
	names, _ := filepath.Glob(filepath.Join(dir, "*.hcl"))
	for name := range open {
		if filepath.Dir(name) == dir && filepath.Ext(name) == ".hcl" {
			names = append(names, name)
		}
	}
	names = slices.DeleteFunc(names, isTestFile)
	if extra != "" {
		names = append(names, extra)
	}
	sort.Strings(names)
	return slices.Compact(names)
}

// readSource returns the editor's text of name, or the disk's.
func readSource(name string, open map[string][]byte) []byte {
	if src, ok := open[name]; ok {
		return src
	}
	st, err := os.Stat(name)
	if err != nil || !st.Mode().IsRegular() || st.Size() > schema.MaxConfigBytes {
		return nil
	}
	src, _ := os.ReadFile(name)
	return src
}

// index fills decls from the parsed files' top-level blocks.
func (w *workspace) index() {
	w.decls = map[string]*decl{}
	for _, f := range w.files {
		for _, blk := range f.body.Blocks {
			w.declare(f, blk)
		}
	}
}

// refs returns the references in p's expressions, found on first use (by
// navigation): walking every expression is most of indexing a large file,
// which the check after each edit would otherwise wait for, and a file
// that did not change keeps its references.
func (p *parsed) refs() []ref {
	p.refsOnce.Do(func() {
		hclsyntax.VisitAll(p.body, func(n hclsyntax.Node) hcl.Diagnostics {
			if st, ok := n.(*hclsyntax.ScopeTraversalExpr); ok {
				if target, rng, ok := refTarget(st.Traversal); ok {
					p.refList = append(p.refList, ref{file: p, target: target, rng: rng})
				}
			}
			return nil
		})
	})
	return p.refList
}

func (w *workspace) declare(f *parsed, blk *hclsyntax.Block) {
	add := func(key string, d *decl) {
		if _, dup := w.decls[key]; !dup {
			w.decls[key] = d
		}
	}
	switch {
	case isNodeKind(blk.Type) && len(blk.Labels) == 2:
		add(blk.Type+"."+blk.Labels[0]+"."+blk.Labels[1], &decl{file: f, block: blk, name: blk.LabelRanges[1]})
	case blk.Type == "variable" && len(blk.Labels) == 1:
		add("var."+blk.Labels[0], &decl{file: f, block: blk, name: blk.LabelRanges[0]})
	case blk.Type == "locals":
		for _, a := range blk.Body.Attributes {
			add("local."+a.Name, &decl{file: f, attr: a, name: a.NameRange})
		}
	}
}

func isNodeKind(s string) bool {
	return slices.Contains(schema.Kinds, schema.Kind(s))
}

// refTarget returns the declaration key a traversal refers to and the
// range of the steps naming it.
func refTarget(tr hcl.Traversal) (string, hcl.Range, bool) {
	root := tr.RootName()
	steps := 2
	if isNodeKind(root) {
		steps = 3
	} else if root != "var" && root != "local" {
		return "", hcl.Range{}, false
	}
	if len(tr) < steps {
		return "", hcl.Range{}, false
	}
	key := root
	for _, s := range tr[1:steps] {
		a, ok := s.(hcl.TraverseAttr)
		if !ok {
			return "", hcl.Range{}, false
		}
		key += "." + a.Name
	}
	return key, hcl.RangeBetween(tr[0].SourceRange(), tr[steps-1].SourceRange()), true
}

// filled is w with the declarations of an earlier workspace that w lacks.
func (w *workspace) filled(from *workspace) *workspace {
	out := *w
	out.decls = maps.Clone(w.decls)
	for k, d := range from.decls {
		if _, ok := out.decls[k]; !ok {
			out.decls[k] = d
		}
	}
	return &out
}

// within reports whether off lies in r (ends included, so that a cursor
// just after a name still is on it).
func within(r hcl.Range, off int) bool { return r.Start.Byte <= off && off <= r.End.Byte }

// file returns the parsed file of name.
func (w *workspace) file(name string) *parsed {
	for _, f := range w.files {
		if f.name == name {
			return f
		}
	}
	return nil
}

// refAt returns the reference under off in f.
func refAt(f *parsed, off int) (ref, bool) {
	for _, r := range f.refs() {
		if within(r.rng, off) {
			return r, true
		}
	}
	return ref{}, false
}

// declAt returns the key of the declaration whose name is under off in f.
func (w *workspace) declAt(f *parsed, off int) (string, bool) {
	for key, d := range w.decls {
		if d.file == f && within(d.name, off) {
			return key, true
		}
	}
	return "", false
}
