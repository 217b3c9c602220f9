package log

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/ctyconv"
	"github.com/pipeline/pipeline/internal/redact"
	"github.com/pipeline/pipeline/schema"
)

var (
	formatAttr = schema.Enum("format", "text", "json").Default("text", `"text"`).
			Doc("text prints `+ KEY VALUE` and `- KEY`; json prints one JSON object per line with time, op, key and value.")
	pathAttr = schema.String("path").Default("", `""`).
			Doc("File to append to; standard output when empty.")
)

// Spec declares sink "log".
func Spec() node.Spec {
	return node.Spec{
		Kind:    node.KindSink,
		Type:    "log",
		Summary: "Prints one line per delta, for debugging and demos.",
		Body:    schema.Block{Attrs: []schema.Attribute{formatAttr, pathAttr}},
		NewSink: newSink,
	}
}

// Sink is a configured log sink.
type Sink struct {
	json bool
	path string
	// Out overrides the destination (tests).
	Out       io.Writer
	secrets   *redact.Redactor // values of sensitive variables, masked in every line
	pathRange hcl.Range
	// pathSensitive is set when the path is computed from a sensitive
	// variable: it is opened raw and never named in an error.
	pathSensitive bool
}

// Claims names the file: two sinks appending to one file are refused by
// validate. Standard output may be shared.
func (s *Sink) Claims() []node.Claim {
	if s.path == "" {
		return nil
	}
	return []node.Claim{{What: "log file", Name: filepath.Clean(s.path), Range: s.pathRange}}
}

func newSink(b node.Build) (node.Sink, hcl.Diagnostics) {
	format, _, diags := formatAttr.Get(b.Content)
	path, pathRange, d := pathAttr.Get(b.Content)
	diags = append(diags, d...)
	if path != "" && !filepath.IsAbs(path) {
		path = filepath.Join(b.Config.Dir, path)
	}
	var secrets *redact.Redactor
	if b.Config != nil {
		secrets = redact.New(b.Config.Sensitive)
	}
	return &Sink{json: format == "json", path: path, pathRange: pathRange, secrets: secrets,
		pathSensitive: pathAttr.IsSensitive(b.Content)}, diags
}

// Open implements node.Sink. In plan mode nothing is opened.
func (s *Sink) Open(_ context.Context, _ node.Env, mode node.Mode) (node.Target, error) {
	t := &target{json: s.json, w: s.Out, secrets: s.secrets, path: s.path}
	if s.pathSensitive {
		t.path = schema.Mask // plan shows where it writes, never a secret
	}
	if t.w == nil {
		t.w = os.Stdout
	}
	if s.path != "" && mode == node.ModeRun {
		f, err := os.OpenFile(s.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		var pe *fs.PathError
		if err != nil && s.pathSensitive && errors.As(err, &pe) {
			return nil, fmt.Errorf("open the log file (its path is sensitive, not shown): %w", pe.Err)
		}
		if err != nil {
			return nil, err // a *PathError: "open PATH: reason"
		}
		t.w, t.closer = f, f
	}
	return t, nil
}

type target struct {
	mu      sync.Mutex
	json    bool
	w       io.Writer
	closer  io.Closer
	secrets *redact.Redactor
	path    string
	// buf and enc make each json line in one buffer reused (under mu): a
	// sink printing 100,000 records at start-up made a map and a copy of
	// every line as garbage.
	buf bytes.Buffer
	enc *json.Encoder
}

// jsonLine is a line of format json, its fields in the order a map of
// them was printed before (sorted); Value is nil for a delete.
type jsonLine struct {
	Key   string `json:"key"`
	Op    string `json:"op"`
	Time  string `json:"time"`
	Value *any   `json:"value,omitempty"`
}

func (t *target) Prepare(r node.Record) (node.Entry, error) {
	return node.Entry{Key: r.Key, Value: r.Value}, nil
}

// TakesPacked implements node.PackedInput: Prepare passes the value on
// unread, so the sink keeps it packed and builds it only to print it.
func (t *target) TakesPacked() {}

func (t *target) Actual(context.Context) ([]node.Entry, error) { return nil, node.ErrNoActualState }

func (t *target) Update(_ context.Context, batch []node.Entry) { t.write("upsert", batch) }

func (t *target) Delete(_ context.Context, batch []node.Entry) { t.write("delete", batch) }

func (t *target) write(op string, batch []node.Entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range batch {
		e := &batch[i]
		// Marks first: a value computed from a secret is masked whatever
		// its text; string redaction is the second net.
		key, value := t.secrets.String(e.Key), t.secrets.Value(schema.Masked(e.Value))
		var err error
		switch {
		case t.json:
			line := jsonLine{Key: key, Op: op, Time: time.Now().UTC().Format(time.RFC3339Nano)}
			if op == "upsert" {
				v := ctyconv.FromCty(value)
				line.Value = &v
			}
			if t.enc == nil {
				t.enc = json.NewEncoder(&t.buf)
			}
			t.buf.Reset()
			if err = t.enc.Encode(line); err == nil { // one line, as json.Marshal and a newline
				_, err = t.w.Write(t.buf.Bytes())
			}
		case op == "upsert":
			_, err = fmt.Fprintf(t.w, "+ %s %s\n", key, ctyconv.String(value))
		default:
			_, err = fmt.Fprintf(t.w, "- %s\n", key)
		}
		e.Err = err
	}
}

// Describe implements node.Describer: a log is append-only, so plan lists
// the lines the initial sync would print.
func (t *target) Describe() node.TargetInfo {
	loc := t.path
	if loc == "" {
		loc = "standard output"
	}
	return node.TargetInfo{Location: loc, Kind: "log", Exists: true}
}

// Show implements node.Describer: the value as the log prints it.
func (t *target) Show(e node.Entry) string { return ctyconv.String(e.Value) }

func (t *target) Close() error {
	if t.closer != nil {
		return t.closer.Close()
	}
	return nil
}

var (
	_ node.Sink        = (*Sink)(nil)
	_ node.Target      = (*target)(nil)
	_ node.Describer   = (*target)(nil)
	_ node.PackedInput = (*target)(nil)
)
