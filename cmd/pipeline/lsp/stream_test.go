package lsp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
)

// rawClient speaks the base protocol by hand, so that a test can send what
// no well-behaved client library would.
type rawClient struct {
	t    *testing.T
	conn net.Conn
	in   *bufio.Reader
}

// serveRaw runs Serve on one end of a pipe and returns the other.
func serveRaw(t *testing.T) *rawClient {
	t.Helper()
	a, b := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, b, Options{Check: func(string, map[string][]byte) Checked { return Checked{} }})
	}()
	t.Cleanup(func() {
		cancel()
		a.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return")
		}
	})
	_ = a.SetDeadline(time.Now().Add(60 * time.Second))
	return &rawClient{t: t, conn: a, in: bufio.NewReader(a)}
}

func (c *rawClient) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.conn, s); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *rawClient) frame(body string) {
	c.send(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body))
}

// answer reads one message and decodes it.
func (c *rawClient) answer() map[string]any {
	c.t.Helper()
	length := -1
	for {
		line, err := c.in.ReadString('\n')
		if err != nil {
			c.t.Fatalf("read a header: %v", err)
		}
		line = strings.TrimSpace(line)
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			length, _ = strconv.Atoi(v)
		}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(c.in, body); err != nil {
		c.t.Fatalf("read a body: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		c.t.Fatalf("answer %q: %v", body, err)
	}
	return m
}

// refused checks an answer is an error of code with id null.
func (c *rawClient) refused(code jsonrpc2.Code, saying string) {
	c.t.Helper()
	m := c.answer()
	id, hasID := m["id"]
	e, _ := m["error"].(map[string]any)
	if !hasID || id != nil || e == nil || e["code"] != float64(code) || !strings.Contains(fmt.Sprint(e["message"]), saying) {
		c.t.Fatalf("answer %v, want an error %d saying %q with id null", m, code, saying)
	}
}

// stillServes checks the server answers a call after what came before.
func (c *rawClient) stillServes(id int) {
	c.t.Helper()
	c.frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{}}`, id))
	m := c.answer()
	if m["id"] != float64(id) || m["result"] == nil {
		c.t.Fatalf("initialize answered %v", m)
	}
}

// TestInvalidJSONAnswered: a well-framed body that is not JSON is answered
// with a parse error of id null, and the server goes on (it used to exit).
func TestInvalidJSONAnswered(t *testing.T) {
	c := serveRaw(t)
	c.send("Content-Length: 5\r\n\r\n{{{{{")
	c.refused(jsonrpc2.ParseError, "not JSON")
	c.frame(`{"jsonrpc":"2.0","result":3}`) // JSON, but no message
	c.refused(jsonrpc2.InvalidRequest, "Invalid request")
	c.stillServes(1)
}

// TestHeaderProblemsAnswered: a header without a length, a length that is
// no number and an endless header line are each answered, and the server
// goes on.
func TestHeaderProblemsAnswered(t *testing.T) {
	c := serveRaw(t)
	c.send("Content-Type: x\r\n\r\n")
	c.refused(jsonrpc2.InvalidRequest, "no Content-Length")
	c.send("Content-Length: lots\r\n\r\n")
	c.refused(jsonrpc2.InvalidRequest, "not a length")
	c.send("X-Long: " + strings.Repeat("a", 3*maxHeaderLine) + "\r\nContent-Length: 2\r\n\r\n{}")
	c.refused(jsonrpc2.InvalidRequest, "longer than")
	c.stillServes(2)
}

// TestOversizedMessageSkipped: a message over MaxMessageBytes is answered
// with an error and skipped as it streams in, without being held in
// memory (it used to be read whole, however large).
func TestOversizedMessageSkipped(t *testing.T) {
	c := serveRaw(t)
	size := MaxMessageBytes + 1
	c.send(fmt.Sprintf("Content-Length: %d\r\n\r\n", size))
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for left := size; left > 0; left -= len(chunk) {
		if _, err := c.conn.Write(chunk[:min(left, len(chunk))]); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	c.refused(jsonrpc2.InvalidRequest, "at most")
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > MaxMessageBytes/4 {
		t.Errorf("skipping %d bytes allocated %d bytes", size, grew)
	}
	c.stillServes(3)
}

// memRWC is a stream over a fixed input whose output is kept.
type memRWC struct {
	io.Reader
	out bytes.Buffer
}

func (m *memRWC) Write(p []byte) (int, error) { return m.out.Write(p) }
func (m *memRWC) Close() error                { return nil }

// FuzzFraming reads a well-framed message of any body, then a call: the
// body is a message or an answered error, and it never costs the call
// behind it. Any raw input after them ends in a read error, never a
// panic or a hang.
func FuzzFraming(f *testing.F) {
	f.Add([]byte("{{{{{"), []byte("Content-Length: 5\r\n\r\n{{{{{"))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"x"}`), []byte("Content-Length: 99999999999\r\n\r\n"))
	f.Add([]byte(`[1,2]`), []byte("Content-Length: -1\r\nContent-Length: 1\r\n\r\n{"))
	f.Add([]byte(""), []byte("no colon\r\n\r\n\r\n"))
	f.Add([]byte(`{"jsonrpc":"1.0","id":1,"method":"x"}`), []byte("Content-Length: 2\r\n\r\n{}"))
	f.Fuzz(func(t *testing.T, body, raw []byte) {
		const call = `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}`
		in := fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) +
			fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(call), call) + string(raw)
		rwc := &memRWC{Reader: strings.NewReader(in)}
		s := newStream(rwc, slog.New(slog.DiscardHandler))
		ctx := context.Background()
		got, _, err := s.Read(ctx)
		if err != nil {
			t.Fatalf("first read: %v", err)
		}
		if rwc.out.Len() == 0 { // the body was a message: the call is next
			if got, _, err = s.Read(ctx); err != nil || rwc.out.Len() != 0 {
				t.Fatalf("the call after body %q: %v, answered %q", body, err, rwc.out.String())
			}
		}
		if c, ok := got.(*jsonrpc2.Call); !ok || c.Method() != "initialize" || c.ID() != jsonrpc2.NewNumberID(7) {
			t.Fatalf("after body %q read %#v, want the call", body, got)
		}
		for range 1000 {
			if _, _, err := s.Read(ctx); err != nil {
				return
			}
		}
	})
}
