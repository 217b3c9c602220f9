package lsp

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"go.lsp.dev/protocol"

	"github.com/pipeline/pipeline/schema"
)

// diagnoseLoop checks the configurations of changed documents once typing
// pauses for Options.Debounce, and publishes what validate says.
func (s *Server) diagnoseLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		}
		if s.opts.Debounce > 0 {
			t := time.NewTimer(s.opts.Debounce)
		wait:
			for {
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-s.kick:
					t.Reset(s.opts.Debounce)
				case <-t.C:
					break wait
				}
			}
		}
		s.diagnose(ctx)
	}
}

// diagnose checks every dirty configuration directory.
func (s *Server) diagnose(ctx context.Context) {
	s.mu.Lock()
	dirs := make([]string, 0, len(s.dirty))
	for d := range s.dirty {
		dirs = append(dirs, d)
	}
	clear(s.dirty)
	open := maps.Clone(s.docs)
	s.mu.Unlock()
	sort.Strings(dirs)
	for _, dir := range dirs {
		if ctx.Err() != nil {
			return
		}
		if byFile, ok := s.safeCheck(dir, open); ok {
			s.publish(ctx, dir, open, byFile)
			s.reindex(dir, open)
		}
	}
}

// safeCheck is check that survives a panic of the loader (a bug): it is
// logged and the directory's diagnostics stay as they were.
func (s *Server) safeCheck(dir string, open map[string][]byte) (byFile map[string][]protocol.Diagnostic, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("check panicked", "file", dir, "err", fmt.Sprint(r), "stack", string(debug.Stack()))
			ok = false
		}
	}()
	return s.check(dir, open), true
}

// check returns validate's diagnostics for dir by file, with the texts to
// convert their positions; config test files open in dir get what
// `pipeline test` would say of them before running (checkTest).
func (s *Server) check(dir string, open map[string][]byte) map[string][]protocol.Diagnostic {
	overlay := map[string][]byte{}
	var tests []string
	for name, src := range open {
		switch {
		case filepath.Dir(name) != dir:
		case isTestFile(name):
			tests = append(tests, name)
		default:
			overlay[name] = src
		}
	}
	checked := s.opts.Check(dir, overlay)
	files, diags := checked.Files, checked.Diags
	s.keepParses(dir, files, diags, checked.Nodes != nil)
	if checked.Nodes != nil { // a configuration that does not parse keeps the last nodes
		s.mu.Lock()
		s.built[dir] = checked.Nodes
		s.mu.Unlock()
	}
	nodes := checked.Nodes
	if diags.HasErrors() { // a node that failed to build is no unknown node
		nodes = nil
	}
	for _, name := range tests {
		diags = append(diags, s.checkTest(name, open[name], nodes)...)
	}
	texts := map[string]*text{}
	textOf := func(name string) *text {
		if t, ok := texts[name]; ok {
			return t
		}
		src, ok := open[name]
		if !ok {
			if f := files[name]; f != nil {
				src = f.Bytes
			} else {
				src = readSource(name, nil)
			}
		}
		texts[name] = newText(src)
		return texts[name]
	}
	out := map[string][]protocol.Diagnostic{}
	for _, d := range diags {
		name, r := anyOpen(dir, open), hcl.Range{}
		if d.Subject != nil && d.Subject.Filename != "" {
			name, r = d.Subject.Filename, *d.Subject
		}
		if name == "" {
			continue
		}
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		out[name] = append(out[name], toLSP(d, textOf(name).rangeOf(r)))
	}
	return out
}

// checkTest checks a config test file's text with Options.CheckTest,
// given the addresses of the configuration's nodes when it compiled
// without error (nodes is not nil); without CheckTest, only its syntax.
func (s *Server) checkTest(name string, src []byte, nodes map[string]any) hcl.Diagnostics {
	if diags := schema.CheckNesting(src, name); diags.HasErrors() {
		return diags
	}
	if s.opts.CheckTest == nil {
		_, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
		return diags
	}
	var addrs []string
	if nodes != nil {
		addrs = slices.Sorted(maps.Keys(nodes))
	}
	return s.opts.CheckTest(name, src, addrs)
}

// keepParses keeps the check's parse of each file (open documents as
// checked, the others as read from disk) as the one navigation and
// completion use, so that they need not parse it again. When every file
// parsed (the loader goes on to compile only then), the check's parses
// are what the server's own would be, even of files with validation
// errors; otherwise a file with an error is left to the server's own parse.
func (s *Server) keepParses(dir string, files map[string]*hcl.File, diags hcl.Diagnostics, parsedAll bool) {
	failed := map[string]bool{}
	for _, d := range diags {
		if !parsedAll && d.Severity == hcl.DiagError && d.Subject != nil {
			name := d.Subject.Filename
			if !filepath.IsAbs(name) {
				name = filepath.Join(dir, name)
			}
			failed[name] = true
		}
	}
	for name, f := range files {
		body, ok := f.Body.(*hclsyntax.Body)
		if !ok || failed[name] {
			continue
		}
		src := f.Bytes
		s.mu.Lock()
		if p := s.cache[name]; p == nil || !bytes.Equal(p.text.src, src) {
			p = &parsed{name: name, text: newText(src)}
			p.setBody(body)
			s.cache[name], s.good[name] = p, p
		}
		s.mu.Unlock()
	}
}

// reindex indexes the workspaces of dir's open documents again after a
// check, while typing pauses, so that the next request finds them ready.
func (s *Server) reindex(dir string, open map[string][]byte) {
	for name, src := range open {
		if filepath.Dir(name) != dir || isTestFile(name) {
			continue
		}
		s.mu.Lock()
		same := bytes.Equal(s.docs[name], src) // typed since: the next request parses
		s.mu.Unlock()
		if same {
			s.snapshot(fileURI(name))
		}
	}
}

// anyOpen is an open document of dir, where a diagnostic without a
// position is shown.
func anyOpen(dir string, open map[string][]byte) string {
	var names []string
	for n := range open {
		if filepath.Dir(n) == dir {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// toLSP converts a diagnostic: validate's summary, then its detail.
func toLSP(d *hcl.Diagnostic, r protocol.Range) protocol.Diagnostic {
	sev := protocol.DiagnosticSeverityError
	if d.Severity == hcl.DiagWarning {
		sev = protocol.DiagnosticSeverityWarning
	}
	msg := d.Summary
	if d.Detail != "" {
		msg += ": " + d.Detail
	}
	return protocol.Diagnostic{Range: r, Severity: sev, Source: "pipeline", Message: msg}
}

// publish sends each file's diagnostics, every open document of dir's
// (none is news too), and clears those of files that had some.
func (s *Server) publish(ctx context.Context, dir string, open map[string][]byte, byFile map[string][]protocol.Diagnostic) {
	s.mu.Lock()
	before := s.published[dir]
	now := map[string]bool{}
	for name := range byFile {
		now[name] = true
	}
	s.published[dir] = now
	versions := maps.Clone(s.versions)
	s.mu.Unlock()
	names := make([]string, 0, len(byFile)+len(before))
	for name := range byFile {
		names = append(names, name)
	}
	for name := range before {
		if !now[name] {
			names = append(names, name)
		}
	}
	for name := range open {
		if filepath.Dir(name) == dir && !now[name] && !before[name] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		p := protocol.PublishDiagnosticsParams{URI: fileURI(name), Diagnostics: nonNil(byFile[name])}
		if _, ok := open[name]; ok {
			p.Version = uint32(max(versions[name], 0))
		}
		if err := s.conn.Notify(ctx, protocol.MethodTextDocumentPublishDiagnostics, p); err != nil {
			s.log.Warn("publish diagnostics failed", "file", name, "err", err)
			return
		}
	}
}
