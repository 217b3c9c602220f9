package files

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
	"go.yaml.in/yaml/v3"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// The properties below hold for every input, not only the examples of
// TestFormats: a fault found once (a byte-order mark, a YAML document cut
// off or dropped, a CSV line break changed, a number rounded) must not
// come back in another shape. `go test` runs their seeds; `go test -fuzz`
// searches further.

// parsed is what parse yields, in a form that compares: each document's
// place, item (as JSON), and error.
func parsed(t *testing.T, format string, data []byte) []string {
	t.Helper()
	s := &Source{format: format}
	var out []string
	s.parse(context.Background(), file{path: "f", data: data}, func(d document) bool {
		item, _ := json.Marshal(d.item)
		out = append(out, fmt.Sprintf("%s %s %v %v", d.at(), item, d.err, d.broken))
		return true
	})
	return out
}

// FuzzByteOrderMark: a UTF-8 byte-order mark at the start changes nothing
// that any format reads.
func FuzzByteOrderMark(f *testing.F) {
	for _, seed := range []string{"a,b\n1,2\n", "[{\"a\":1}]", "{\"a\":1}\n{\"a\":2}\n", "a: 1\n---\nb: 2\n", "x\n#c\ny\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n", "\"q\",b\r\n1,2\r\n", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, content string) {
		if strings.HasPrefix(content, "\ufeff") {
			return // a second mark is content
		}
		for _, format := range formats {
			plain := parsed(t, format, []byte(content))
			marked := parsed(t, format, []byte("\ufeff"+content))
			if diff := cmp.Diff(plain, marked); diff != "" {
				t.Errorf("format %s: a byte-order mark changes what is read (-without +with)\n%s", format, diff)
			}
		}
	})
}

// FuzzCSVFieldsRoundTrip: any fields, written as RFC 4180 says (every
// field quoted, quotes doubled, rows ended by \r\n), read back unchanged:
// line breaks in a field, \r\n included, stay as they were.
func FuzzCSVFieldsRoundTrip(f *testing.F) {
	f.Add("a\r\nb", "c\nd", `e"f`, "")
	f.Add("\r", "\r\r\n", "\n\n", ",")
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		row := []string{a, b, c, d}
		quote := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
		var text strings.Builder
		text.WriteString("w,x,y,z\r\n")
		for i := range row {
			if i > 0 {
				text.WriteByte(',')
			}
			text.WriteString(quote(row[i]))
		}
		text.WriteString("\r\n")
		var items []any
		s := &Source{format: formatCSV}
		s.parse(context.Background(), file{path: "f", data: []byte(text.String())}, func(doc document) bool {
			if doc.err != nil {
				t.Fatalf("%q: %v", text.String(), doc.err)
			}
			items = append(items, doc.item)
			return true
		})
		want := []any{map[string]any{"w": a, "x": b, "y": c, "z": d}}
		if strings.HasPrefix(text.String(), "\ufeff") {
			return
		}
		if diff := cmp.Diff(want, items); diff != "" {
			t.Errorf("%q (-want +got)\n%s", text.String(), diff)
		}
	})
}

// randomValue makes a JSON value of the YAML library's kinds from r.
func randomValue(r *rand.Rand, depth int) any {
	switch k := r.IntN(7); {
	case depth > 2 || k == 0:
		return fmt.Sprintf("s%d", r.IntN(1000))
	case k == 1:
		return json.Number(fmt.Sprintf("%d.%d", r.IntN(1000), r.Uint64()))
	case k == 2:
		return r.IntN(2) == 0
	case k == 3:
		return "line one\nline two: x\n"
	case k == 4:
		var out []any
		for range r.IntN(3) + 1 {
			out = append(out, randomValue(r, depth+1))
		}
		return out
	}
	out := map[string]any{}
	for i := range r.IntN(3) + 1 {
		out[fmt.Sprintf("k%d", i)] = randomValue(r, depth+1)
	}
	return out
}

// yamlBlock writes v as block YAML, by the YAML library. The library
// writes a json.Number as a string, so each goes out as a placeholder that
// the number's text then replaces.
func yamlBlock(t *testing.T, v any) string {
	t.Helper()
	var nums []string
	var swap func(any) any
	swap = func(v any) any {
		switch x := v.(type) {
		case json.Number:
			nums = append(nums, string(x))
			return fmt.Sprintf("numberplaceholder%dx", len(nums)-1)
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = swap(e)
			}
			return out
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				out[k] = swap(e)
			}
			return out
		}
		return v
	}
	b, err := yaml.Marshal(swap(v))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for i := len(nums) - 1; i >= 0; i-- { // placeholder 1x is not a prefix of 10x
		text = strings.ReplaceAll(text, fmt.Sprintf("numberplaceholder%dx", i), nums[i])
	}
	return text
}

// FuzzYAMLStream: a stream of documents, written in any of the forms YAML
// allows (a document after `---` on its own line or on the same line, a
// `...` end marker, a `%YAML` directive, comments between), reads back as
// exactly those documents, in order: none is cut off, merged or dropped.
func FuzzYAMLStream(f *testing.F) {
	f.Add(uint64(1), uint8(3))
	f.Add(uint64(7), uint8(1))
	f.Add(uint64(42), uint8(8))
	f.Fuzz(func(t *testing.T, seed uint64, count uint8) {
		r := rand.New(rand.NewPCG(seed, 0))
		var want []any
		var text strings.Builder
		for i := range int(count%10) + 1 {
			v := randomValue(r, 0)
			want = append(want, v)
			js, _ := json.Marshal(v)
			switch r.IntN(6) {
			case 0:
				text.WriteString("---\n" + yamlBlock(t, v))
			case 1:
				text.WriteString("--- " + string(js) + "\n") // flow on the marker's line
			case 2:
				text.WriteString("--- # document " + fmt.Sprint(i) + "\n" + yamlBlock(t, v) + "...\n")
			case 3:
				if i > 0 {
					text.WriteString("...\n") // a directive follows an explicit end
				}
				text.WriteString("%YAML 1.2\n---\n" + yamlBlock(t, v) + "...\n")
			case 4:
				if s, ok := v.(string); ok {
					text.WriteString("--- |\n  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n")
					want[len(want)-1] = strings.TrimSuffix(s, "\n") + "\n"
					continue
				}
				text.WriteString("--- &anchor" + fmt.Sprint(i) + "\n" + yamlBlock(t, v))
			default: // a tag of no known kind: a collection keeps its kind
				tag := "--- !thing\n"
				switch v.(type) {
				case []any, map[string]any:
				default:
					tag = "---\n"
				}
				text.WriteString(tag + yamlBlock(t, v))
			}
		}
		var got []any
		s := &Source{format: formatYAML}
		s.parse(context.Background(), file{path: "f", data: []byte(text.String())}, func(d document) bool {
			if d.err != nil {
				t.Fatalf("%s\n%v", text.String(), d.err)
			}
			got = append(got, d.item)
			return true
		})
		var flat []any // a sequence document holds one item per element
		for _, v := range want {
			if seq, ok := v.([]any); ok {
				flat = append(flat, seq...)
				continue
			}
			flat = append(flat, v)
		}
		if diff := cmp.Diff(flat, got); diff != "" {
			t.Errorf("%s(-want +got)\n%s", text.String(), diff)
		}
	})
}

// FuzzExactNumbers: a number in any format and in a key is the number the
// configuration language reads from the same text, never rounded to a
// float64; one CheckNumber refuses (1e700) is no key, and its record is
// skipped.
func FuzzExactNumbers(f *testing.F) {
	f.Add("3.14159265358979323846264338327950288")
	f.Add("123456789012345678901234567890")
	f.Add("-0.1")
	f.Add("1e-7")
	f.Add("1E7050281")
	f.Fuzz(func(t *testing.T, num string) {
		if !jsonNumberRE.MatchString(num) || len(num) > 100 {
			return
		}
		want, err := cty.ParseNumberVal(num)
		if err != nil {
			return
		}
		for format, content := range map[string]string{
			"json":  `[{"n":` + num + `}]`,
			"jsonl": `{"n":` + num + "}\n",
			"yaml":  "n: " + num + "\n",
		} {
			s := mustBuild(t, t.TempDir(), "paths = [\"f\"]\nformat = \""+format+"\"\nkey = item.n")
			var recs []node.Record
			s.parse(context.Background(), file{path: "f", data: []byte(content)}, func(d document) bool {
				for _, e := range s.appendItem(nil, d) {
					if e.odd == nil {
						recs = append(recs, e.rec)
					}
				}
				return true
			})
			if schema.CheckNumber(want.AsBigFloat()) != nil {
				if len(recs) != 0 {
					t.Errorf("%s %q: keyed by a number out of range", format, content)
				}
				continue
			}
			if len(recs) != 1 {
				t.Fatalf("%s %q: %d records", format, content, len(recs))
			}
			got := node.Unpack(recs[0].Value).GetAttr("n")
			if !got.Equals(want).True() {
				t.Errorf("%s %q: n = %#v, want %#v", format, content, got, want)
			}
			key := want.AsBigFloat().Text('f', -1)
			if want.AsBigFloat().Sign() == 0 {
				key = "0" // -0 is the number 0, and so is its key
			}
			if recs[0].Key != key {
				t.Errorf("%s %q: key %q, want %q", format, content, recs[0].Key, key)
			}
		}
	})
}
