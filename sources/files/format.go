package files

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"go.yaml.in/yaml/v3"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/ctyconv"
	"github.com/pipeline/pipeline/internal/kobject"
	"github.com/pipeline/pipeline/schema"
)

// The formats of source "files". kubernetes reads objects (load.go); the
// others read plain data items, each keyed by the key expression.
const (
	formatKubernetes = "kubernetes"
	formatJSON       = "json"
	formatJSONL      = "jsonl"
	formatYAML       = "yaml"
	formatCSV        = "csv"
	formatLines      = "lines"
)

var formats = []string{formatKubernetes, formatJSON, formatJSONL, formatYAML, formatCSV, formatLines}

// reasonBadKey counts, in pipeline_source_skipped_objects_total, an item
// whose key expression fails or yields no usable key.
const reasonBadKey = "bad_key"

// parse yields the documents (format kubernetes) or items of a file, one
// at a time, until yield returns false. A byte-order mark at the start is
// dropped, in every format.
func (s *Source) parse(ctx context.Context, f file, yield func(document) bool) {
	f.data = bytes.TrimPrefix(f.data, utf8BOM)
	switch s.format {
	case formatJSON:
		parseJSON(ctx, f, yield)
	case formatJSONL:
		parseJSONL(ctx, f, yield)
	case formatYAML:
		parseYAML(ctx, f, yield)
	case formatCSV:
		parseCSV(ctx, f, yield)
	case formatLines:
		parseLines(ctx, f, yield)
	default:
		parseObjects(ctx, f, yield)
	}
}

// parseJSON reads one JSON value: an array holds one item per element,
// each named by its line, anything else is one item. The array is read
// element by element, after the whole file was checked, so that a file
// that does not parse gives no item and a large one is never held decoded
// at once.
func parseJSON(ctx context.Context, f file, yield func(document) bool) {
	if err := checkJSON(f.data); err != nil {
		yield(brokenJSON(f, err))
		return
	}
	dec := json.NewDecoder(bytes.NewReader(f.data))
	dec.UseNumber()
	start := bytes.TrimLeft(f.data, " \t\r\n")
	if start[0] != '[' {
		var v any
		if err := dec.Decode(&v); err != nil {
			yield(brokenJSON(f, err))
			return
		}
		if v != nil {
			yield(document{path: f.path, where: f.path, line: 1 + bytes.Count(f.data[:len(f.data)-len(start)], []byte("\n")), item: v})
		}
		return
	}
	_, _ = dec.Token() // '[': checked above
	lc := lineCounter{data: f.data}
	for i := 0; dec.More(); i++ {
		if ctx.Err() != nil {
			return
		}
		line := lc.lineAt(elementStart(f.data, int(dec.InputOffset())))
		var v any
		if err := dec.Decode(&v); err != nil {
			yield(brokenJSON(f, err))
			return
		}
		if !yield(document{path: f.path, where: fmt.Sprintf("%s item %d", f.path, i), line: line, item: v}) {
			return
		}
	}
}

// checkJSON reports whether data is one JSON value within the bounds of
// the configuration's own data functions, without decoding it.
func checkJSON(data []byte) error {
	if err := schema.CheckDataDepth(data); err != nil {
		return err
	}
	if json.Valid(data) {
		return nil
	}
	var raw json.RawMessage // not valid: find where, still without decoding
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	return errors.New("invalid JSON")
}

// brokenJSON is the document of a file that does not parse as JSON, named
// by the line of the error when the decoder says where it is.
func brokenJSON(f file, err error) document {
	d := document{path: f.path, where: f.path, err: err, broken: true}
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset > 0 {
		d.line = 1 + bytes.Count(f.data[:min(int(se.Offset), len(f.data))], []byte("\n"))
	}
	return d
}

// elementStart skips the white space and comma before an array element.
func elementStart(data []byte, off int) int {
	for off < len(data) && bytes.IndexByte([]byte(" \t\r\n,"), data[off]) >= 0 {
		off++
	}
	return off
}

// lineCounter turns increasing byte offsets into line numbers, counting
// each newline once.
type lineCounter struct {
	data []byte
	off  int
	line int
}

func (c *lineCounter) lineAt(off int) int {
	off = min(off, len(c.data))
	if off < c.off {
		c.off, c.line = 0, 0
	}
	c.line += bytes.Count(c.data[c.off:off], []byte("\n"))
	c.off = off
	return c.line + 1
}

// parseYAML reads every YAML document; a document that is a sequence holds
// one item per element, each named by its line. A file that is JSON is
// read as JSON (isJSON).
func parseYAML(ctx context.Context, f file, yield func(document) bool) {
	if isJSON(f.data) {
		parseJSON(ctx, f, yield)
		return
	}
	if err := schema.CheckDataDepth(f.data); err != nil {
		yield(document{path: f.path, where: f.path, err: err, broken: true})
		return
	}
	yamlDocs(ctx, f, func(where string, root *yaml.Node, v any) []document {
		if v == nil {
			return nil
		}
		seq, ok := v.([]any)
		if !ok {
			return []document{{path: f.path, where: where, line: root.Line, item: v}}
		}
		elems := aliasTarget(root)
		out := make([]document, 0, len(seq))
		for i, it := range seq {
			line := root.Line
			if i < len(elems.Content) {
				line = elems.Content[i].Line
			}
			out = append(out, document{path: f.path, where: fmt.Sprintf("%s item %d", where, i), line: line, item: it})
		}
		return out
	}, yield)
}

// parseJSONL reads one JSON value per line; blank lines are skipped.
func parseJSONL(ctx context.Context, f file, yield func(document) bool) {
	for n, line := range lines(f.data) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if ctx.Err() != nil {
			return
		}
		d := document{path: f.path, where: f.path, line: n}
		if d.item, d.err = decodeData(line); d.err != nil {
			d.broken = true
		}
		if !yield(d) {
			return
		}
	}
}

// maxColumns bounds the columns of a CSV file, at the number a
// spreadsheet holds: each row is an object with an attribute per column,
// and a header of a million names made every row a million attributes
// that each sink renders.
const maxColumns = 16384

// parseCSV reads a CSV file whose first row names the columns: each later
// row is an item, an object of strings. A row with another number of
// fields than the header is bad; the rows around it are still read. A
// quoted field keeps its line breaks as written (RFC 4180), "\r\n" too.
func parseCSV(ctx context.Context, f file, yield func(document) bool) {
	r := csv.NewReader(bytes.NewReader(f.data))
	r.ReuseRecord = true
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return
	}
	if err == nil {
		header = slices.Clone(header)
		err = checkHeader(header)
	}
	if err != nil {
		yield(document{path: f.path, where: f.path, line: 1, err: fmt.Errorf("header: %w", err), broken: true})
		return
	}
	crlf := crlfFields{data: f.data}
	for {
		if ctx.Err() != nil {
			return
		}
		row, err := r.Read()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				yield(document{path: f.path, where: f.path, err: err, broken: true})
				return
			}
			if !yield(document{path: f.path, where: f.path, line: pe.StartLine, err: pe.Err, broken: true}) || !errors.Is(pe.Err, csv.ErrFieldCount) {
				return // after a quoting error, where the next row starts is unknown
			}
			continue
		}
		line, _ := r.FieldPos(0)
		item := make(map[string]any, len(header))
		for i, name := range header {
			item[name] = crlf.field(r, i, row[i])
		}
		if !yield(document{path: f.path, where: f.path, line: line, item: item}) {
			return
		}
	}
}

// crlfFields restores the "\r\n" line breaks that encoding/csv turns into
// "\n" inside a quoted field, from the field's text in the file: RFC 4180
// keeps a quoted field's bytes as they are.
type crlfFields struct {
	data   []byte
	starts []int // the offset of each line, built on first need
	has    int8  // 0 unknown, 1 the file holds "\r\n", -1 it does not
}

func (c *crlfFields) field(r *csv.Reader, i int, parsed string) string {
	if !strings.Contains(parsed, "\n") {
		return parsed
	}
	if c.has == 0 {
		c.has = -1
		if bytes.Contains(c.data, []byte("\r\n")) {
			c.has = 1
			c.starts = append(c.starts, 0)
			for j, b := range c.data {
				if b == '\n' {
					c.starts = append(c.starts, j+1)
				}
			}
		}
	}
	if c.has < 0 {
		return parsed
	}
	line, col := r.FieldPos(i)
	if line < 1 || line > len(c.starts) {
		return parsed
	}
	off := c.starts[line-1] + col - 1
	if off >= len(c.data) || c.data[off] != '"' {
		return parsed
	}
	var b strings.Builder
	for j := off + 1; j < len(c.data); j++ {
		if c.data[j] == '"' {
			if j+1 < len(c.data) && c.data[j+1] == '"' {
				b.WriteByte('"')
				j++
				continue
			}
			if strings.ReplaceAll(b.String(), "\r\n", "\n") == parsed {
				return b.String()
			}
			return parsed // not the field encoding/csv read: keep what it read
		}
		b.WriteByte(c.data[j])
	}
	return parsed
}

// checkHeader rejects empty and repeated column names: both would make a
// column unreachable as item.<name>.
func checkHeader(header []string) error {
	if len(header) > maxColumns {
		return fmt.Errorf("%d columns, more than the limit of %d", len(header), maxColumns)
	}
	seen := map[string]bool{}
	for i, h := range header {
		switch {
		case h == "":
			return fmt.Errorf("column %d has no name", i+1)
		case seen[h]:
			return fmt.Errorf("column %q appears twice", h)
		}
		seen[h] = true
	}
	return nil
}

// parseLines makes an item of every line, without surrounding white space.
// Blank lines and lines starting with # are skipped.
func parseLines(ctx context.Context, f file, yield func(document) bool) {
	for n, line := range lines(f.data) {
		s := strings.TrimSpace(string(line))
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if ctx.Err() != nil || !yield(document{path: f.path, where: f.path, line: n, item: s}) {
			return
		}
	}
}

// lines yields each line of data with its number, counting from 1.
func lines(data []byte) func(yield func(int, []byte) bool) {
	return func(yield func(int, []byte) bool) {
		for n := 1; len(data) > 0; n++ {
			line := data
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				line, data = data[:i], data[i+1:]
			} else {
				data = nil
			}
			if !yield(n, line) {
				return
			}
		}
	}
}

// decodeData decodes one JSON value within the depth and number bounds of
// the configuration's own data functions. Numbers keep their text
// (json.Number), so that converting them loses no digit.
func decodeData(js []byte) (any, error) {
	if err := schema.CheckDataDepth(js); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	// What follows the value is read here, not by the decoder, whose next
	// read would grow its buffer to three times a small file's size.
	if off := dec.InputOffset(); len(bytes.TrimLeft(js[off:], " \t\r\n")) > 0 {
		return nil, fmt.Errorf("invalid data after the value at offset %d", off)
	}
	return v, nil
}

// appendItem keys and converts an item of a data format. Of two items
// with one key the first (by file path, then position) provides it.
func (s *Source) appendItem(out []entry, d document) []entry {
	if d.err != nil {
		return append(out, skipped(d.at(), kobject.ReasonBadDocument, d.err))
	}
	v, err := ctyconv.ToCty(d.item)
	if err != nil {
		return append(out, skipped(d.at(), kobject.ReasonUnconvertible, err))
	}
	key, err := s.itemKey(v)
	if err != nil {
		return append(out, skipped(d.at(), reasonBadKey, err))
	}
	if v, err = packed(d.item); err != nil {
		return out // not reached: converting d.item succeeded above
	}
	origin := &node.Origin{Source: s.address, File: d.where, Line: d.line}
	if d.line > 0 {
		origin.File = d.path
	}
	return append(out, entry{rec: node.Record{Key: key, Value: v, Origin: origin}})
}

// itemKey evaluates the key expression with item in scope. Without a key
// expression (format lines) the item is its own key.
func (s *Source) itemKey(item cty.Value) (key string, err error) {
	defer func() {
		if p := recover(); p != nil { // a function's bug must not stop the source
			key, err = "", fmt.Errorf("key: expression panicked: %v", p)
		}
	}()
	k := item
	if s.key != nil {
		ctx := s.keyCtx.NewChild()
		ctx.Variables = map[string]cty.Value{"item": item}
		var diags hcl.Diagnostics
		k, diags = s.key.Value(ctx)
		if diags.HasErrors() {
			return "", fmt.Errorf("key: %s", diagText(diags))
		}
	}
	if k.ContainsMarked() {
		return "", errors.New("key is computed from a sensitive value; keys are shown in logs and status")
	}
	if k.IsNull() || !k.IsKnown() {
		return "", errors.New("key is null")
	}
	if k.Type() == cty.Number {
		return schema.NumberKey(k.AsBigFloat())
	}
	if k.Type() != cty.String {
		return "", fmt.Errorf("key must be a string or a number, not %s", k.Type().FriendlyName())
	}
	if k.AsString() == "" {
		return "", errors.New("key is empty")
	}
	return k.AsString(), nil
}

func diagText(diags hcl.Diagnostics) string {
	var parts []string
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			parts = append(parts, d.Summary+": "+d.Detail)
		}
	}
	return strings.Join(parts, "; ")
}
