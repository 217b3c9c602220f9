package files

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/pipeline/pipeline/schema"
)

// yamlDocs reads a YAML stream with the YAML library's own stream decoder,
// one document at a time, and yields what decode makes of each decoded
// value. The library knows the whole syntax of a stream: text after `---`
// on its line (`--- |`, `--- !tag`, `--- &anchor`), the `...` end marker
// and the documents after it, and `%YAML`/`%TAG` directives. A syntax
// error ends the file (where the next document starts is unknown) and is
// named by its line. A file of one document (most are) names it by the
// file's path alone, which its records share; others name each
// "path document N". Only two documents are held at once: the one yielded
// and the next, read ahead to know whether the first is the only one.
func yamlDocs(ctx context.Context, f file, decode func(where string, root *yaml.Node, v any) []document, yield func(document) bool) {
	dec := yaml.NewDecoder(bytes.NewReader(acceptYAML12(f.data)))
	var cur yaml.Node
	err := dec.Decode(&cur)
	for i := 0; !errors.Is(err, io.EOF); i++ {
		if ctx.Err() != nil {
			yield(document{path: f.path, where: f.path, err: ctx.Err(), broken: true})
			return
		}
		where := f.path
		if i > 0 {
			where = fmt.Sprintf("%s document %d", f.path, i)
		}
		if err != nil {
			line, msg := yamlErrorLine(err)
			yield(document{path: f.path, where: where, line: line, err: msg, broken: true})
			return
		}
		var next yaml.Node
		nextErr := dec.Decode(&next)
		if i == 0 && !errors.Is(nextErr, io.EOF) {
			where = fmt.Sprintf("%s document %d", f.path, i)
		}
		root := &cur
		if len(cur.Content) > 0 {
			root = cur.Content[0]
		}
		c := yamlConv{}
		v, cerr := c.value(&cur, 0)
		if cerr != nil {
			yield(document{path: f.path, where: where, err: cerr, broken: true})
			return
		}
		for _, d := range decode(where, root, v) {
			if !yield(d) {
				return
			}
		}
		cur, err = next, nextErr
	}
}

var yamlLineRE = regexp.MustCompile(`^yaml: (line (\d+): )?`)

// yamlParserProblems are the problems the YAML library's parser (not its
// scanner) reports. It names them by the line of the construct they are
// in counted from 0, where the scanner counts from 1, and leaves out a
// line 0.
var yamlParserProblems = []string{"did not find expected ',' or ']'", "did not find expected ',' or '}'",
	"did not find expected '-' indicator", "did not find expected <document start>", "did not find expected key",
	"did not find expected node content", "found duplicate %TAG directive", "found duplicate %YAML directive",
	"found incompatible YAML document", "found undefined tag handle"}

// yamlErrorLine splits the library's "yaml: line N: message" into the
// line, counted from 1 (0: unknown), and the message, so that the error
// is named path:line as in the other formats.
func yamlErrorLine(err error) (int, error) {
	m := yamlLineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, err
	}
	msg := strings.TrimPrefix(err.Error(), m[0])
	n, _ := strconv.Atoi(m[2])
	if slices.Contains(yamlParserProblems, msg) {
		n++
	}
	return n, errors.New(msg)
}

// yaml12Directive matches a `%YAML 1.2` directive line. The YAML library
// reads the YAML 1.2 core schema but accepts only `%YAML 1.1` directives,
// so the version of such a line is read as 1.1, in a copy of the same
// length (lines keep their numbers).
var yaml12Directive = regexp.MustCompile(`(?m)^%YAML[ \t]+1\.2([ \t#\r]|$)`)

func acceptYAML12(data []byte) []byte {
	locs := yaml12Directive.FindAllIndex(data, -1)
	if locs == nil {
		return data
	}
	out := slices.Clone(data)
	for _, l := range locs {
		i := bytes.Index(out[l[0]:l[1]], []byte("1.2"))
		out[l[0]+i+2] = '1'
	}
	return out
}

// yamlConv makes the JSON-like value (maps, slices, strings, bool,
// json.Number, nil) of a decoded YAML node. Numbers keep their text, so
// that no digit is lost to a float64. Plain scalars resolve as YAML 1.1
// did before (yes/no/on/off are booleans), as kubectl reads manifests.
type yamlConv struct {
	values, aliased int // values made, and those made through an alias
	inAlias         int
}

// value converts n; depth bounds nesting (aliases included, which also
// ends an alias that contains itself).
func (c *yamlConv) value(n *yaml.Node, depth int) (any, error) {
	if depth > schema.MaxDataDepth {
		return nil, fmt.Errorf("line %d: arrays and objects nest more than %d levels deep", n.Line, schema.MaxDataDepth)
	}
	c.values++
	if c.inAlias > 0 {
		c.aliased++
		if c.aliased > 100 && c.values > 1000 && float64(c.aliased)/float64(c.values) > allowedAliasRatio(c.values) {
			return nil, fmt.Errorf("line %d: aliases expand to too many values (%d of %d)", n.Line, c.aliased, c.values)
		}
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0], depth)
	case yaml.AliasNode:
		c.inAlias++
		defer func() { c.inAlias-- }()
		return c.value(n.Alias, depth+1)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, e := range n.Content {
			v, err := c.value(e, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		return c.mapping(n, depth)
	case yaml.ScalarNode:
		return scalar(n)
	}
	return nil, fmt.Errorf("line %d: unknown YAML node", n.Line)
}

// allowedAliasRatio is the YAML library's own bound on alias expansion
// (a "billion laughs" document): the share of values that may come from
// aliases falls from 99% to 10% as a document grows.
func allowedAliasRatio(values int) float64 {
	const low, high = 400_000, 4_000_000
	switch {
	case values <= low:
		return 0.99
	case values >= high:
		return 0.10
	}
	return 0.99 - 0.89*float64(values-low)/float64(high-low)
}

// mapping converts a mapping; merge keys (`<<: *base`) add the entries of
// the mappings they name that the mapping does not set itself.
func (c *yamlConv) mapping(n *yaml.Node, depth int) (any, error) {
	out := make(map[string]any, len(n.Content)/2)
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		key, err := c.key(k)
		if err != nil {
			return nil, err
		}
		if out[key], err = c.value(v, depth+1); err != nil {
			return nil, err
		}
	}
	for _, m := range merges {
		srcs := []*yaml.Node{m}
		if target := aliasTarget(m); target.Kind == yaml.SequenceNode {
			srcs = target.Content
		}
		for _, src := range srcs {
			v, err := c.value(src, depth+1)
			if err != nil {
				return nil, err
			}
			mm, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("line %d: a merge key (<<) needs a mapping or a sequence of mappings", m.Line)
			}
			for k, e := range mm {
				if _, set := out[k]; !set {
					out[k] = e
				}
			}
		}
	}
	return out, nil
}

func aliasTarget(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < schema.MaxDataDepth; i++ {
		n = n.Alias
	}
	return n
}

// key is a mapping key's text as written: JSON keys are strings, so a
// key reads as the string it spells (`on:` is "on", `1:` is "1"), and
// null as "null".
func (c *yamlConv) key(k *yaml.Node) (string, error) {
	k = aliasTarget(k)
	if k.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("line %d: a mapping key must be a scalar, not a sequence or mapping", k.Line)
	}
	if k.ShortTag() == "!!null" {
		return "null", nil
	}
	return k.Value, nil
}

// yaml11Bools are the plain scalars that YAML 1.1 (and so kubectl) reads
// as booleans beyond true and false.
var yaml11Bools = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "on": true, "On": true, "ON": true,
	"n": false, "N": false, "no": false, "No": false, "NO": false, "off": false, "Off": false, "OFF": false,
}

// jsonNumberRE is the syntax of a JSON number.
var jsonNumberRE = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// scalar converts a scalar by its resolved tag.
func scalar(n *yaml.Node) (any, error) {
	if len(n.Value) > schema.MaxNumberDigits && (n.ShortTag() == "!!int" || n.ShortTag() == "!!float") {
		return nil, fmt.Errorf("line %d: a number of more than %d characters", n.Line, schema.MaxNumberDigits)
	}
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		err := n.Decode(&b)
		return b, err
	case "!!int", "!!float":
		return yamlNumber(n)
	case "!!binary":
		b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(n.Value), ""))
		if err != nil {
			return nil, fmt.Errorf("line %d: !!binary: %w", n.Line, err)
		}
		return string(b), nil
	case "!!str":
		if n.Style != 0 { // quoted, or tagged
			break
		}
		if b, ok := yaml11Bools[n.Value]; ok {
			return b, nil
		}
		// The library resolves a number beyond float64's range (1e700)
		// as a string; the configuration language reads it as a number.
		if jsonNumberRE.MatchString(n.Value) {
			if len(n.Value) > schema.MaxNumberDigits {
				return nil, fmt.Errorf("line %d: a number of more than %d characters", n.Line, schema.MaxNumberDigits)
			}
			return json.Number(n.Value), nil
		}
	}
	return n.Value, nil
}

// yamlNumber keeps a number's text when it is a JSON number; other
// spellings (0x1F, 1_000, .5, +1) are read by the library and written
// back in JSON's syntax. Infinity and NaN have no JSON form.
func yamlNumber(n *yaml.Node) (any, error) {
	if jsonNumberRE.MatchString(n.Value) {
		return json.Number(n.Value), nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, fmt.Errorf("line %d: %w", n.Line, err)
	}
	switch x := v.(type) {
	case int:
		return json.Number(strconv.Itoa(x)), nil
	case int64:
		return json.Number(strconv.FormatInt(x, 10)), nil
	case uint64:
		return json.Number(strconv.FormatUint(x, 10)), nil
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !jsonNumberRE.MatchString(s) {
			return nil, fmt.Errorf("line %d: %s is not a number JSON can hold", n.Line, n.Value)
		}
		return json.Number(s), nil
	}
	return n.Value, nil // a number the library reads as another type
}
