package lsp

import (
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"go.lsp.dev/protocol"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// The expressions are compiled at the first completion, not at every start
// of the program.
var (
	// headerRE is a node block's header being typed: `sink "ebpf_`.
	headerRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^\s*(source|transform|sink)\s+("?)([\w-]*)$`)
	})
	// stepRE is the label of a config test's given or expect block being
	// typed: `given "source.st`.
	stepRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^\s*(given|expect)\s+("?)([\w.-]*)$`)
	})
	// itemRE is an attribute or block name being typed at a line's start.
	itemRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*[\w-]*$`) })
	// wordRE is the traversal being typed: `transform.extract.` or `lo`.
	wordRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*\.?$`)
	})
)

// complete returns the completions at off in file f of workspace w.
func (s *Server) complete(w *workspace, f *parsed, off int) []protocol.CompletionItem {
	c := cursorAt(f, off)
	prefix := f.text.linePrefix(off)
	if isTestFile(f.name) {
		return completeTest(w, &s.opts.TestFile, c, prefix)
	}
	if c.attr != "" {
		return s.completeValue(w, c, prefix)
	}
	if m := headerRE().FindStringSubmatch(prefix); m != nil && len(c.frames) == 0 {
		return s.completeTypes(schema.Kind(m[1]), m[2] == "")
	}
	if !itemRE().MatchString(prefix) {
		return nil
	}
	if len(c.frames) == 0 {
		return completeTopLevel()
	}
	body, _, ok := blockAt(s.opts.Registry, nil, c.frames)
	if !ok {
		return nil
	}
	return completeItems(body, c.frames[len(c.frames)-1].present)
}

func completeTopLevel() []protocol.CompletionItem {
	var items []protocol.CompletionItem
	for i, t := range topLevel {
		insert := t.name + " {\n\t$0\n}"
		if t.labels != "" {
			insert = t.name + " " + t.labels + " {\n\t$0\n}"
		}
		items = append(items, protocol.CompletionItem{Label: t.name, Kind: protocol.CompletionItemKindKeyword,
			Detail: t.doc, InsertText: insert, InsertTextFormat: protocol.InsertTextFormatSnippet,
			SortText: string(rune('a' + i))})
	}
	return items
}

// completeTest completes in a config test file: its blocks and
// attributes (declared by testFile), and a given's source or an expect's
// sink among the configuration's. Values are literals: nothing is offered
// inside them.
func completeTest(w *workspace, testFile *schema.Block, c cursor, prefix string) []protocol.CompletionItem {
	if c.attr != "" {
		return nil
	}
	if m := stepRE().FindStringSubmatch(prefix); m != nil && len(c.frames) == 1 {
		return stepTargets(w, m[1], m[2] == "")
	}
	if !itemRE().MatchString(prefix) {
		return nil
	}
	body, _, ok := blockAt(nil, testFile, c.frames)
	if !ok {
		return nil
	}
	var present map[string]bool
	if len(c.frames) > 0 {
		present = c.frames[len(c.frames)-1].present
	}
	return completeItems(body, present)
}

// stepTargets lists the configuration's sources (for a given) or sinks
// (for an expect), by address.
func stepTargets(w *workspace, step string, quote bool) []protocol.CompletionItem {
	kind := string(schema.KindSource)
	if step == "expect" {
		kind = string(schema.KindSink)
	}
	var items []protocol.CompletionItem
	for key, d := range w.decls {
		if !strings.HasPrefix(key, kind+".") {
			continue
		}
		insert := key
		if quote {
			insert = `"` + key + `"`
		}
		items = append(items, protocol.CompletionItem{Label: key, Kind: protocol.CompletionItemKindReference,
			Detail: kind, Documentation: markdown(blockText(d)), InsertText: insert})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Label < items[j].Label })
	return items
}

// completeTypes lists the registered types of a kind with their summary.
func (s *Server) completeTypes(k schema.Kind, quote bool) []protocol.CompletionItem {
	var items []protocol.CompletionItem
	for _, typ := range s.opts.Registry.Types(k) {
		spec, _ := s.opts.Registry.Lookup(k, typ)
		insert := typ
		if quote {
			insert = `"` + typ + `"`
		}
		items = append(items, protocol.CompletionItem{Label: typ, Kind: protocol.CompletionItemKindClass,
			Detail: spec.Summary, Documentation: markdown(spec.Doc), InsertText: insert})
	}
	return items
}

// completeItems lists a body's attributes and nested blocks not yet
// written, required ones first.
func completeItems(body schema.Block, present map[string]bool) []protocol.CompletionItem {
	var items []protocol.CompletionItem
	for _, a := range body.Attrs {
		info := a.Info()
		if present[info.Name] {
			continue
		}
		sort := "1"
		if info.Required {
			sort = "0"
		}
		items = append(items, protocol.CompletionItem{Label: info.Name, Kind: protocol.CompletionItemKindProperty,
			Detail: attrDetail(info), Documentation: markdown(attrMarkdown(info)),
			InsertText: info.Name + " = ", SortText: sort + info.Name})
	}
	for _, bt := range body.Blocks {
		if present[bt.Name] && !bt.Many {
			continue
		}
		sort, detail := "3", "block"
		if bt.Required {
			sort, detail = "2", "block (required)"
		}
		if bt.Many {
			detail += ", repeatable"
		}
		labels := ""
		for i, l := range bt.Labels {
			labels += ` "${` + string(rune('1'+i)) + ":" + l + `}"`
		}
		items = append(items, protocol.CompletionItem{Label: bt.Name, Kind: protocol.CompletionItemKindStruct,
			Detail: detail, Documentation: markdown(bt.Doc), InsertText: bt.Name + labels + " {\n\t$0\n}",
			InsertTextFormat: protocol.InsertTextFormatSnippet, SortText: sort + bt.Name})
	}
	return items
}

// completeValue completes inside an attribute's value: enum values,
// references, the fields of what the node's input offers, functions.
func (s *Server) completeValue(w *workspace, c cursor, prefix string) []protocol.CompletionItem {
	body, spec, _ := blockAt(s.opts.Registry, nil, c.frames)
	info := attrInfo(body, c.attr)
	if info == nil {
		info = &schema.AttrInfo{Name: c.attr, Type: "expression"}
	}
	if strings.Count(prefix, `"`)%2 == 1 { // inside a string: only enum values
		if strings.Contains(prefix[strings.LastIndex(prefix, `"`):], "${") {
			return s.completeWord(w, c, spec, info, wordRE().FindString(prefix))
		}
		return enumItems(info, false)
	}
	word := wordRE().FindString(prefix)
	items := s.completeWord(w, c, spec, info, word)
	if !strings.Contains(word, ".") {
		items = append(enumItems(info, true), items...)
	}
	return items
}

func enumItems(info *schema.AttrInfo, quote bool) []protocol.CompletionItem {
	var items []protocol.CompletionItem
	for _, v := range info.Enum {
		insert := v
		if quote {
			insert = `"` + v + `"`
		}
		items = append(items, protocol.CompletionItem{Label: v, Kind: protocol.CompletionItemKindEnumMember,
			Detail: info.Name, InsertText: insert, SortText: "0" + v})
	}
	if strings.HasPrefix(info.Type, "bool") && quote {
		for _, v := range []string{"true", "false"} {
			items = append(items, protocol.CompletionItem{Label: v, Kind: protocol.CompletionItemKindValue, SortText: "0" + v})
		}
	}
	return items
}

// completeWord completes a traversal: its root when it has no dot, else
// the next step after its last dot.
func (s *Server) completeWord(w *workspace, c cursor, spec *node.Spec, info *schema.AttrInfo, word string) []protocol.CompletionItem {
	parts := strings.Split(word, ".")
	if len(parts) == 1 {
		return s.completeRoots(w, info)
	}
	parts = parts[:len(parts)-1] // the last part is being typed
	var items []protocol.CompletionItem
	add := func(label, detail, doc string, kind protocol.CompletionItemKind) {
		items = append(items, protocol.CompletionItem{Label: label, Kind: kind, Detail: detail, Documentation: markdown(doc)})
	}
	root := parts[0]
	switch {
	case isNodeKind(root) && len(parts) == 1:
		for _, typ := range declaredTypes(w, root) {
			sp, _ := s.opts.Registry.Lookup(schema.Kind(root), typ)
			add(typ, sp.Summary, "", protocol.CompletionItemKindClass)
		}
	case isNodeKind(root) && len(parts) == 2:
		for key, d := range w.decls {
			if strings.HasPrefix(key, root+"."+parts[1]+".") {
				add(strings.TrimPrefix(key, root+"."+parts[1]+"."), root+" "+parts[1], blockText(d), protocol.CompletionItemKindReference)
			}
		}
	case (root == "var" || root == "local") && len(parts) == 1:
		for key, d := range w.decls {
			if strings.HasPrefix(key, root+".") {
				add(strings.TrimPrefix(key, root+"."), root, blockText(d), protocol.CompletionItemKindVariable)
			}
		}
	case slices.Contains(info.Roots, root):
		for _, f := range s.fields(w, c, spec, parts) {
			add(f, "field", "", protocol.CompletionItemKindField)
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Label < items[j].Label })
	return items
}

// completeRoots lists what an expression may start with: the roots its
// attribute allows, the references it may make, variables, locals and
// functions.
func (s *Server) completeRoots(w *workspace, info *schema.AttrInfo) []protocol.CompletionItem {
	var items []protocol.CompletionItem
	for _, k := range info.RefKinds {
		items = append(items, protocol.CompletionItem{Label: k, Kind: protocol.CompletionItemKindModule,
			Detail: "reference to a " + k, SortText: "1" + k})
		for key := range w.decls {
			if strings.HasPrefix(key, k+".") {
				items = append(items, protocol.CompletionItem{Label: key, Kind: protocol.CompletionItemKindReference,
					Documentation: markdown(blockText(w.decls[key])), SortText: "1" + key})
			}
		}
	}
	if len(info.RefKinds) > 0 {
		return items // a reference is a bare traversal: no functions or variables
	}
	for _, r := range info.Roots {
		items = append(items, protocol.CompletionItem{Label: r, Kind: protocol.CompletionItemKindVariable,
			Detail: "per-record value", SortText: "1" + r})
	}
	for _, r := range []string{"var", "local"} {
		items = append(items, protocol.CompletionItem{Label: r, Kind: protocol.CompletionItemKindModule, SortText: "2" + r})
	}
	for _, name := range functionNames(s.funcs) {
		sig := signature(name, s.funcs[name])
		items = append(items, protocol.CompletionItem{Label: name, Kind: protocol.CompletionItemKindFunction,
			Detail: sig, Documentation: markdown(s.funcs[name].Description()), InsertText: name + "(", SortText: "3" + name})
	}
	return items
}

// declaredTypes lists the types of a kind the configuration declares.
func declaredTypes(w *workspace, kind string) []string {
	var out []string
	for key := range w.decls {
		if p := strings.Split(key, "."); len(p) == 3 && p[0] == kind && !slices.Contains(out, p[1]) {
			out = append(out, p[1])
		}
	}
	sort.Strings(out)
	return out
}

func markdown(s string) any {
	if s == "" {
		return nil
	}
	return protocol.MarkupContent{Kind: protocol.Markdown, Value: s}
}
