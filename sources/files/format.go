package files

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

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

// parse splits a file into documents (format kubernetes) or items.
func (s *Source) parse(f file) []document {
	switch s.format {
	case formatJSON:
		return parseJSON(f)
	case formatJSONL:
		return parseJSONL(f)
	case formatYAML:
		return parseYAML(f)
	case formatCSV:
		return parseCSV(f)
	case formatLines:
		return parseLines(f)
	}
	return parseObjects(f)
}

// parseJSON reads one JSON value: an array holds one item per element,
// anything else is one item.
func parseJSON(f file) []document {
	v, err := decodeData(f.data)
	if err != nil {
		return []document{{where: f.path, err: err, broken: true}}
	}
	return items(f.path, v)
}

// parseYAML reads every YAML document; a document that is a sequence holds
// one item per element. A file that is JSON is read as JSON (isJSON).
func parseYAML(f file) []document {
	if isJSON(f.data) {
		return parseJSON(f)
	}
	return yamlDocs(f, func(where string, raw []byte) []document {
		err := schema.CheckDataDepth(raw)
		var js []byte
		if err == nil {
			js, err = yaml.YAMLToJSON(raw)
		}
		var v any
		if err == nil {
			v, err = decodeData(js)
		}
		if err != nil {
			return []document{{where: where, err: err, broken: true}}
		}
		return items(where, v)
	})
}

// parseJSONL reads one JSON value per line; blank lines are skipped.
func parseJSONL(f file) []document {
	var out []document
	for n, line := range lines(f.data) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		v, err := decodeData(line)
		if err != nil {
			out = append(out, document{where: f.path, line: n, err: err, broken: true})
			continue
		}
		out = append(out, document{where: f.path, line: n, item: v})
	}
	return out
}

// parseCSV reads a CSV file whose first row names the columns: each later
// row is an item, an object of strings. A row with another number of
// fields than the header is bad; the rows around it are still read.
func parseCSV(f file) []document {
	r := csv.NewReader(bytes.NewReader(f.data))
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err == nil {
		err = checkHeader(header)
	}
	if err != nil {
		return []document{{where: f.path, line: 1, err: fmt.Errorf("header: %w", err), broken: true}}
	}
	var out []document
	for {
		row, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				return append(out, document{where: f.path, err: err, broken: true})
			}
			out = append(out, document{where: f.path, line: pe.StartLine, err: pe.Err, broken: true})
			if errors.Is(pe.Err, csv.ErrFieldCount) {
				continue
			}
			return out // a quoting error: where the next row starts is unknown
		}
		line, _ := r.FieldPos(0)
		item := make(map[string]any, len(header))
		for i, name := range header {
			item[name] = row[i]
		}
		out = append(out, document{where: f.path, line: line, item: item})
	}
}

// checkHeader rejects empty and repeated column names: both would make a
// column unreachable as item.<name>.
func checkHeader(header []string) error {
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
func parseLines(f file) []document {
	var out []document
	for n, line := range lines(f.data) {
		s := strings.TrimSpace(string(line))
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		out = append(out, document{where: f.path, line: n, item: s})
	}
	return out
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
// the configuration's own data functions.
func decodeData(js []byte) (any, error) {
	if err := schema.CheckDataDepth(js); err != nil {
		return nil, err
	}
	var v any
	if err := utiljson.Unmarshal(js, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// items makes the items of one decoded value: an array's elements, or the
// value itself. A null value (an empty YAML document) is no item.
func items(where string, v any) []document {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		out := make([]document, 0, len(x))
		for i, it := range x {
			out = append(out, document{where: fmt.Sprintf("%s item %d", where, i), item: it})
		}
		return out
	}
	return []document{{where: where, item: v}}
}

// itemEntries keys and converts the items of a data format. Of two items
// with one key the first (by file path, then position) provides it.
func (s *Source) itemEntries(docs []document) []entry {
	out := make([]entry, 0, len(docs))
	for _, d := range docs {
		if d.err != nil {
			out = append(out, skipped(d.at(), kobject.ReasonBadDocument, d.err))
			continue
		}
		v, err := ctyconv.ToCty(d.item)
		if err != nil {
			out = append(out, skipped(d.at(), kobject.ReasonUnconvertible, err))
			continue
		}
		key, err := s.itemKey(v)
		if err != nil {
			out = append(out, skipped(d.at(), reasonBadKey, err))
			continue
		}
		if v, err = packed(d.item); err != nil {
			continue // not reached: converting d.item succeeded above
		}
		out = append(out, entry{rec: node.Record{Key: key, Value: v, Origin: &node.Origin{Source: s.address, File: d.where, Line: d.line}}})
	}
	return out
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
		return k.AsBigFloat().Text('f', -1), nil
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
