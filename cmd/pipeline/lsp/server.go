package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty/function"
	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// Options are what the server is built from.
type Options struct {
	// Registry holds every node type: completion and hover read it.
	Registry *node.Registry
	// Check validates the configuration at path (a directory), reading
	// overlay's contents instead of the disk's for the files it names.
	Check func(path string, overlay map[string][]byte) Checked
	// TestFile declares the blocks of a config test file (*.test.hcl):
	// completion and hover read it.
	TestFile schema.Block
	// CheckTest is what `pipeline test` says of a config test file's text
	// before running it; addrs are the addresses of the configuration's
	// nodes ("KIND.TYPE.NAME"), nil when it did not compile.
	CheckTest func(name string, src []byte, addrs []string) hcl.Diagnostics
	// Format is `pipeline fmt` of one file's bytes.
	Format func(name string, src []byte) ([]byte, error)
	// Debounce is how long diagnostics wait for typing to pause; 0 checks
	// after every change.
	Debounce time.Duration
	// Logger receives the server's own log (never stdout: that is the protocol).
	Logger *slog.Logger
}

// Checked is what validate says of a configuration.
type Checked struct {
	Files map[string]*hcl.File
	Diags hcl.Diagnostics
	// Nodes are the nodes it built, by address ("source.kubernetes.pods"):
	// completion asks them for their objects' fields (node.FieldLister).
	Nodes map[string]any
}

// Server is one client's language server.
type Server struct {
	opts  Options
	conn  jsonrpc2.Conn
	funcs map[string]function.Function
	log   *slog.Logger
	kick  chan struct{}
	exit  chan struct{}
	once  sync.Once

	mu        sync.Mutex
	docs      map[string][]byte          // open documents by file name
	versions  map[string]int32           // their versions
	cache     map[string]*parsed         // last parse of each file read
	indexed   map[string]*workspace      // last workspace of each document
	good      map[string]*parsed         // last parse of each file without errors
	sound     map[string]*workspace      // the declarations of good[name] alone
	dirty     map[string]bool            // configuration directories to check
	published map[string]map[string]bool // per directory, the files given diagnostics
	built     map[string]map[string]any  // per directory, the nodes the last check that compiled built
}

// Serve runs the server on rwc until the client exits, the stream ends
// or ctx is done.
func Serve(ctx context.Context, rwc io.ReadWriteCloser, opts Options) error {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, funcs: schema.Functions(".", nil), log: opts.Logger,
		kick: make(chan struct{}, 1), exit: make(chan struct{}),
		docs: map[string][]byte{}, versions: map[string]int32{}, cache: map[string]*parsed{}, indexed: map[string]*workspace{},
		good: map[string]*parsed{}, sound: map[string]*workspace{},
		dirty: map[string]bool{}, published: map[string]map[string]bool{}, built: map[string]map[string]any{}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.conn = jsonrpc2.NewConn(newStream(rwc, s.log))
	loop := make(chan struct{})
	go func() { defer close(loop); s.diagnoseLoop(ctx) }()
	s.conn.Go(ctx, s.handle)
	var err error
	select {
	case <-ctx.Done():
	case <-s.exit:
	case <-s.conn.Done():
		if e := s.conn.Err(); e != nil && !errors.Is(e, io.EOF) && !errors.Is(e, io.ErrClosedPipe) {
			err = fmt.Errorf("lsp: %w", e)
		}
	}
	cancel()
	// Closing the stream ends the read loop where the stream can be
	// closed (pipes); on a terminal's stdin it cannot, and the process
	// exits right after anyway, so Serve does not wait for it.
	s.conn.Close()
	<-loop
	return err
}

// handle answers one message. A panic in a handler is a bug: it is logged
// and answered as an internal error, and the server goes on.
func (s *Server) handle(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) (err error) {
	replied := false
	answer := func(result any, e error) error { replied = true; return reply(ctx, result, e) }
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("handler panicked", "op", req.Method(), "err", fmt.Sprint(r), "stack", string(debug.Stack()))
			if !replied {
				err = reply(ctx, nil, fmt.Errorf("%w: %v", jsonrpc2.ErrInternal, r))
			}
		}
	}()
	result, known, e := s.dispatch(ctx, req)
	if _, isCall := req.(*jsonrpc2.Call); !isCall {
		return nil
	}
	if !known {
		return answer(nil, fmt.Errorf("%w: %s", jsonrpc2.ErrMethodNotFound, req.Method()))
	}
	return answer(result, e)
}

// params decodes a request's parameters.
func params[T any](req jsonrpc2.Request) (T, error) {
	var p T
	if err := json.Unmarshal(req.Params(), &p); err != nil {
		return p, fmt.Errorf("%w: %s", jsonrpc2.ErrInvalidParams, err)
	}
	return p, nil
}

// dispatch runs a method; known is false for a request it does not serve.
func (s *Server) dispatch(ctx context.Context, req jsonrpc2.Request) (result any, known bool, err error) {
	switch req.Method() {
	case protocol.MethodInitialize:
		return s.initialize(), true, nil
	case protocol.MethodShutdown:
		return nil, true, nil
	case protocol.MethodExit:
		s.once.Do(func() { close(s.exit) })
		return nil, true, nil
	case protocol.MethodTextDocumentDidOpen:
		p, err := params[protocol.DidOpenTextDocumentParams](req)
		if err == nil {
			s.setDoc(p.TextDocument.URI, p.TextDocument.Version, []byte(p.TextDocument.Text))
		}
		return nil, true, err
	case protocol.MethodTextDocumentDidChange:
		p, err := params[protocol.DidChangeTextDocumentParams](req)
		if err == nil && len(p.ContentChanges) > 0 { // full sync: the last change is the whole text
			s.setDoc(p.TextDocument.URI, p.TextDocument.Version, []byte(p.ContentChanges[len(p.ContentChanges)-1].Text))
		}
		return nil, true, err
	case protocol.MethodTextDocumentDidClose:
		p, err := params[protocol.DidCloseTextDocumentParams](req)
		if err == nil {
			s.closeDoc(p.TextDocument.URI)
		}
		return nil, true, err
	case protocol.MethodTextDocumentCompletion:
		return atQuick(s, req, func(w *workspace, f *parsed, off int, _ protocol.ReferenceContext) any {
			return &protocol.CompletionList{Items: nonNil(s.complete(w, f, off))}
		})
	case protocol.MethodTextDocumentHover:
		return at(s, req, func(w *workspace, f *parsed, off int, _ protocol.ReferenceContext) any {
			if h := s.hover(w, f, off); h != nil {
				return h
			}
			return nil
		})
	case protocol.MethodTextDocumentDefinition:
		return at(s, req, func(w *workspace, f *parsed, off int, _ protocol.ReferenceContext) any {
			return nonNil(definition(w, f, off))
		})
	case protocol.MethodTextDocumentReferences:
		return at(s, req, func(w *workspace, f *parsed, off int, rc protocol.ReferenceContext) any {
			return nonNil(references(w, f, off, rc.IncludeDeclaration))
		})
	case protocol.MethodTextDocumentDocumentSymbol:
		p, err := params[protocol.DocumentSymbolParams](req)
		if err != nil {
			return nil, true, err
		}
		w, f := s.snapshot(p.TextDocument.URI)
		_ = w
		return nonNil(symbols(f)), true, nil
	case protocol.MethodTextDocumentFormatting:
		p, err := params[protocol.DocumentFormattingParams](req)
		if err != nil {
			return nil, true, err
		}
		return s.format(p.TextDocument.URI), true, nil
	}
	return nil, false, nil
}

// positioned is the part of every position request the server reads.
type positioned struct {
	TextDocument protocol.TextDocumentIdentifier `json:"textDocument"`
	Position     protocol.Position               `json:"position"`
	Context      protocol.ReferenceContext       `json:"context"`
}

// at decodes a position request and runs fn on the document's workspace.
func at(s *Server, req jsonrpc2.Request, fn func(w *workspace, f *parsed, off int, rc protocol.ReferenceContext) any) (any, bool, error) {
	return atWith(s.snapshot, req, fn)
}

// atQuick is at on quickSnapshot's workspace.
func atQuick(s *Server, req jsonrpc2.Request, fn func(w *workspace, f *parsed, off int, rc protocol.ReferenceContext) any) (any, bool, error) {
	return atWith(s.quickSnapshot, req, fn)
}

func atWith(snapshot func(protocol.DocumentURI) (*workspace, *parsed), req jsonrpc2.Request,
	fn func(w *workspace, f *parsed, off int, rc protocol.ReferenceContext) any) (any, bool, error) {
	p, err := params[positioned](req)
	if err != nil {
		return nil, true, err
	}
	w, f := snapshot(p.TextDocument.URI)
	return fn(w, f, f.text.offset(p.Position), p.Context), true, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (s *Server) initialize() protocol.InitializeResult {
	return protocol.InitializeResult{
		Capabilities: protocol.ServerCapabilities{
			TextDocumentSync:           protocol.TextDocumentSyncOptions{OpenClose: true, Change: protocol.TextDocumentSyncKindFull},
			CompletionProvider:         &protocol.CompletionOptions{TriggerCharacters: []string{".", `"`, "="}},
			HoverProvider:              true,
			DefinitionProvider:         true,
			ReferencesProvider:         true,
			DocumentSymbolProvider:     true,
			DocumentFormattingProvider: true,
		},
		ServerInfo: &protocol.ServerInfo{Name: "pipeline"},
	}
}

// docName is the key of a document: its file name, or the URI itself
// for a buffer that is not a file.
func docName(u protocol.DocumentURI) string {
	if name := fileName(u); name != "" {
		return name
	}
	return string(u)
}

func (s *Server) setDoc(u protocol.DocumentURI, version int32, src []byte) {
	name := docName(u)
	s.mu.Lock()
	s.docs[name], s.versions[name] = src, version
	s.markDirty(name)
	s.mu.Unlock()
}

func (s *Server) closeDoc(u protocol.DocumentURI) {
	name := docName(u)
	s.mu.Lock()
	delete(s.docs, name)
	delete(s.versions, name)
	s.markDirty(name) // the disk's text counts again
	s.mu.Unlock()
}

// markDirty queues name's configuration for checking (s.mu held).
func (s *Server) markDirty(name string) {
	if !filepath.IsAbs(name) {
		return // not a file: no configuration directory to check
	}
	s.dirty[filepath.Dir(name)] = true
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// snapshot returns the workspace of a document and its parsed file.
func (s *Server) snapshot(u protocol.DocumentURI) (*workspace, *parsed) {
	name := docName(u)
	s.mu.Lock()
	open := maps.Clone(s.docs)
	s.mu.Unlock()
	w := &workspace{dir: filepath.Dir(name)}
	names := []string{name}
	if filepath.IsAbs(name) {
		names = configNames(w.dir, open, name)
	}
	for _, n := range names {
		w.files = append(w.files, s.parsed(n, readSource(n, open)))
	}
	// The index of the same parsed files is the same: reuse it.
	s.mu.Lock()
	defer s.mu.Unlock()
	if last := s.indexed[name]; last != nil && slices.Equal(last.files, w.files) {
		return last, last.file(name)
	}
	w.index()
	s.indexed[name] = w
	return w, w.file(name)
}

// quickSnapshot is snapshot for completion, which answers while the user
// types: when the document changed since its last indexed parse, the file
// is not parsed again (tens of milliseconds for thousands of blocks) but
// that parse stands for it (parsed.edited): the cursor's surroundings are
// lexed from the current text, references and fields come from the blocks
// as they were. The check after typing pauses refreshes the parse. A parse
// with errors may have dropped the block being typed in (the parser skips
// a block it cannot read), so its declarations are filled from the
// document's last parse without errors.
func (s *Server) quickSnapshot(u protocol.DocumentURI) (*workspace, *parsed) {
	name := docName(u)
	s.mu.Lock()
	src, open := s.docs[name]
	old, last := s.cache[name], s.indexed[name]
	s.mu.Unlock()
	w, f := last, (*parsed)(nil)
	if !open || old == nil || last == nil || last.file(name) != old || bytes.Equal(old.text.src, src) {
		w, f = s.snapshot(u)
	} else {
		f = old.edited(src)
	}
	if wf := w.file(name); wf != nil && wf.broken {
		if sound := s.soundOf(name); sound != nil {
			w = w.filled(sound)
		}
	}
	return w, f
}

// soundOf is the workspace of name's last parse without errors alone.
func (s *Server) soundOf(name string) *workspace {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, w := s.good[name], s.sound[name]
	if g == nil || w != nil && w.files[0] == g {
		return w
	}
	w = &workspace{dir: filepath.Dir(name), files: []*parsed{g}}
	w.index()
	s.sound[name] = w
	return w
}

// parsed returns the parse of src, reusing the last one of the same text.
func (s *Server) parsed(name string, src []byte) *parsed {
	s.mu.Lock()
	p := s.cache[name]
	s.mu.Unlock()
	if p != nil && bytes.Equal(p.text.src, src) {
		return p
	}
	p = parse(name, src)
	s.mu.Lock()
	s.cache[name] = p
	if !p.broken {
		s.good[name] = p
	}
	s.mu.Unlock()
	return p
}

// format returns the edit that makes a document `pipeline fmt`'s output;
// none when it is formatted or does not parse (diagnostics say why).
func (s *Server) format(u protocol.DocumentURI) []protocol.TextEdit {
	name := docName(u)
	s.mu.Lock()
	src, ok := s.docs[name]
	s.mu.Unlock()
	if !ok || s.opts.Format == nil {
		return []protocol.TextEdit{}
	}
	out, err := s.opts.Format(name, src)
	if err != nil || bytes.Equal(out, src) {
		return []protocol.TextEdit{}
	}
	t := newText(src)
	return []protocol.TextEdit{{Range: protocol.Range{End: t.position(len(src))}, NewText: string(out)}}
}
