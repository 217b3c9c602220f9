package lsp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"go.lsp.dev/jsonrpc2"
)

// MaxMessageBytes bounds the body of one message. The largest configuration
// file validate reads is 16 MiB (schema.MaxConfigBytes); its text in a
// didOpen, JSON-escaped, fits twice over. A longer message is skipped
// without being held in memory and answered with an error.
const MaxMessageBytes = 32 << 20

// maxHeaderLine bounds one header line; a longer one is skipped to its end
// and makes its message's header invalid.
const maxHeaderLine = 4 << 10

// stream is the LSP base protocol (Content-Length framing) under the
// JSON-RPC connection. Unlike jsonrpc2.NewStream, which ends the
// connection at the first body that is not a JSON-RPC message and buffers
// a body of any announced length, it answers a bad message with a
// JSON-RPC error of id null, as the specification asks when the id cannot
// be read, and goes on with the next one.
type stream struct {
	rwc io.ReadWriteCloser
	in  *bufio.Reader
	log *slog.Logger
	mu  sync.Mutex // one message at a time on the wire: replies and Read's own answers
}

func newStream(rwc io.ReadWriteCloser, log *slog.Logger) *stream {
	return &stream{rwc: rwc, in: bufio.NewReaderSize(rwc, maxHeaderLine), log: log}
}

// refusal is a message Read answers itself and skips.
type refusal struct {
	code jsonrpc2.Code
	msg  string
}

// Read returns the next JSON-RPC message. It fails only when the stream
// does (end of input, a read error, ctx done).
func (s *stream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		msg, n, bad, err := s.next()
		if err != nil {
			return nil, n, err
		}
		if bad == nil {
			return msg, n, nil
		}
		s.log.Warn("lsp message refused", "err", bad.msg)
		if err := s.refuse(bad); err != nil {
			return nil, n, err
		}
	}
}

// next reads one framed message: the message, or what is wrong with it.
func (s *stream) next() (jsonrpc2.Message, int64, *refusal, error) {
	length, total, bad, err := s.header()
	if err != nil {
		return nil, total, nil, err
	}
	if bad == nil && length > MaxMessageBytes {
		bad = &refusal{jsonrpc2.InvalidRequest, fmt.Sprintf(
			"message of %d bytes skipped: a message may hold at most %d bytes (%d MiB)", length, MaxMessageBytes, MaxMessageBytes>>20)}
	}
	if bad != nil { // skipped as it streams in, never held
		n, err := io.CopyN(io.Discard, s.in, max(length, 0))
		if err != nil {
			return nil, total + n, nil, fmt.Errorf("skip a message of %d bytes: %w", length, err)
		}
		return nil, total + n, bad, nil
	}
	data := make([]byte, length)
	if _, err := io.ReadFull(s.in, data); err != nil {
		return nil, total, nil, fmt.Errorf("read a message of %d bytes: %w", length, err)
	}
	total += length
	msg, err := jsonrpc2.DecodeMessage(data)
	switch {
	case err == nil:
		return msg, total, nil, nil
	case !json.Valid(data):
		return nil, total, &refusal{jsonrpc2.ParseError, fmt.Sprintf("Parse error: the body of %d bytes is not JSON", length)}, nil
	}
	return nil, total, &refusal{jsonrpc2.InvalidRequest, fmt.Sprintf("Invalid request: %v", err)}, nil
}

// header reads header lines up to the empty one and returns the announced
// Content-Length.
func (s *stream) header() (length, total int64, bad *refusal, err error) {
	length = -1
	for {
		line, err := s.in.ReadSlice('\n')
		total += int64(len(line))
		if errors.Is(err, bufio.ErrBufferFull) {
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = s.in.ReadSlice('\n')
				total += int64(len(line))
			}
			if err == nil {
				bad = &refusal{jsonrpc2.InvalidRequest, fmt.Sprintf("a header line is longer than %d bytes", maxHeaderLine)}
				continue
			}
		}
		if err != nil {
			return 0, total, nil, fmt.Errorf("read a header: %w", err)
		}
		text := strings.TrimSpace(string(line))
		if text == "" {
			break
		}
		name, value, ok := strings.Cut(text, ":")
		switch {
		case !ok:
			bad = &refusal{jsonrpc2.InvalidRequest, fmt.Sprintf("header line %q has no colon", clip(text))}
		case strings.EqualFold(strings.TrimSpace(name), "Content-Length"):
			n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
			if err != nil || n < 0 {
				bad = &refusal{jsonrpc2.InvalidRequest, fmt.Sprintf("Content-Length %q is not a length", clip(value))}
				continue
			}
			length = n
		}
	}
	if bad == nil && length < 0 {
		bad = &refusal{jsonrpc2.InvalidRequest, "the message has no Content-Length header"}
	}
	return length, total, bad, nil
}

// clip shortens a quoted header for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// refuse answers a message Read skipped: a response with id null.
func (s *stream) refuse(r *refusal) error {
	body, err := json.Marshal(struct {
		Version string         `json:"jsonrpc"`
		ID      *int           `json:"id"`
		Error   jsonrpc2.Error `json:"error"`
	}{Version: jsonrpc2.Version, Error: jsonrpc2.Error{Code: r.code, Message: r.msg}})
	if err != nil {
		return fmt.Errorf("encode an error answer: %w", err)
	}
	_, err = s.write(body)
	return err
}

// Write sends one message.
func (s *stream) Write(ctx context.Context, msg jsonrpc2.Message) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m, ok := msg.(json.Marshaler)
	if !ok {
		return 0, fmt.Errorf("encode %T: not a JSON-RPC message", msg)
	}
	body, err := m.MarshalJSON()
	if err != nil {
		return 0, fmt.Errorf("encode a message: %w", err)
	}
	return s.write(body)
}

func (s *stream) write(body []byte) (int64, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(body))
	b.Write(body)
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.rwc.Write(b.Bytes())
	if err != nil {
		return int64(n), fmt.Errorf("write a message: %w", err)
	}
	return int64(n), nil
}

// Close closes the connection under the stream.
func (s *stream) Close() error { return s.rwc.Close() }

var _ jsonrpc2.Stream = (*stream)(nil)
