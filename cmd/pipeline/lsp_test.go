package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/pipeline/pipeline/cmd/pipeline/lsp"
)

// lspClient drives `pipeline lsp` over a pipe as an editor does.
type lspClient struct {
	t    testing.TB
	conn jsonrpc2.Conn

	mu      sync.Mutex
	diags   map[protocol.DocumentURI][]protocol.Diagnostic
	changed chan struct{}
	version map[protocol.DocumentURI]int32
}

// startLSP starts a server with the options `pipeline lsp` uses (no
// debounce, so a test waits only for the check) and initializes it.
func startLSP(t testing.TB) *lspClient {
	t.Helper()
	return startLSPWith(t, lspOptions(0))
}

// startLSPWith is startLSP with the server's options.
func startLSPWith(t testing.TB, opts lsp.Options) *lspClient {
	t.Helper()
	a, b := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- lsp.Serve(ctx, b, opts) }()
	c := &lspClient{t: t, conn: jsonrpc2.NewConn(jsonrpc2.NewStream(a)), diags: map[protocol.DocumentURI][]protocol.Diagnostic{},
		changed: make(chan struct{}, 1), version: map[protocol.DocumentURI]int32{}}
	c.conn.Go(ctx, func(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) error {
		if req.Method() == protocol.MethodTextDocumentPublishDiagnostics {
			var p protocol.PublishDiagnosticsParams
			if err := json.Unmarshal(req.Params(), &p); err != nil {
				t.Errorf("publishDiagnostics: %v", err)
			}
			c.mu.Lock()
			c.diags[p.URI] = p.Diagnostics
			c.mu.Unlock()
			select {
			case c.changed <- struct{}{}:
			default:
			}
		}
		return reply(ctx, nil, nil)
	})
	t.Cleanup(func() {
		c.conn.Notify(context.Background(), protocol.MethodExit, nil)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the server did not exit")
		}
		cancel()
		c.conn.Close()
	})
	var init protocol.InitializeResult
	c.call(protocol.MethodInitialize, protocol.InitializeParams{}, &init)
	c.notify(protocol.MethodInitialized, protocol.InitializedParams{})
	return c
}

func (c *lspClient) call(method string, params, result any) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.conn.Call(ctx, method, params, result); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
}

func (c *lspClient) notify(method string, params any) {
	c.t.Helper()
	if err := c.conn.Notify(context.Background(), method, params); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
}

func (c *lspClient) open(name, text string) {
	c.notify(protocol.MethodTextDocumentDidOpen, protocol.DidOpenTextDocumentParams{TextDocument: protocol.TextDocumentItem{
		URI: uri.File(name), LanguageID: "hcl", Version: 1, Text: text}})
}

func (c *lspClient) change(name, text string) {
	u := uri.File(name)
	c.mu.Lock()
	c.version[u]++
	v := c.version[u] + 1
	c.mu.Unlock()
	c.notify(protocol.MethodTextDocumentDidChange, protocol.DidChangeTextDocumentParams{
		TextDocument:   protocol.VersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: u}, Version: v},
		ContentChanges: []protocol.TextDocumentContentChangeEvent{{Text: text}}})
}

// waitDiags waits until the diagnostics of name satisfy ok, failing after
// a deadline.
func (c *lspClient) waitDiags(name string, ok func([]protocol.Diagnostic) bool) []protocol.Diagnostic {
	c.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		c.mu.Lock()
		d, seen := c.diags[uri.File(name)]
		c.mu.Unlock()
		if seen && ok(d) {
			return d
		}
		select {
		case <-c.changed:
		case <-deadline:
			c.t.Fatalf("diagnostics of %s: still %v", name, d)
		}
	}
}

func pos(line, char int) protocol.Position {
	return protocol.Position{Line: uint32(line), Character: uint32(char)}
}

// posOf finds the position of the n-th (from 0) occurrence of sub in
// text, plus off characters (ASCII text).
func posOf(t testing.TB, text, sub string, off int) protocol.Position {
	t.Helper()
	i := strings.Index(text, sub)
	if i < 0 {
		t.Fatalf("%q not in the text", sub)
	}
	i += off
	line := strings.Count(text[:i], "\n")
	return pos(line, i-strings.LastIndex(text[:i], "\n")-1)
}

// copyExample copies an example's directory, data files included, into a
// temporary one.
func copyExample(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "examples", name))); err != nil {
		t.Fatalf("example %s: %v", name, err)
	}
	return dir
}

func readString(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
