package configtest

import (
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/schema"
)

// A config test file (NAME.test.hcl, beside the configuration it tests)
// holds test blocks. Each is a timeline: given blocks feed a source at a
// virtual time, expect blocks check a sink's state at a virtual time.
//
//	test "NAME" {
//	  vars = { grace = "10s" }            # optional variables of the configuration
//	  given "source.TYPE.NAME" {
//	    at     = "0s"
//	    add    = { KEY = VALUE, ... }     # the key must be absent
//	    update = { KEY = VALUE, ... }     # the key must be present
//	    delete = [KEY, ...]               # the key must be present
//	  }
//	  expect "sink.TYPE.NAME" {
//	    at     = "150ms"
//	    state  = { KEY = VALUE, ... }     # exactly what the target holds, in its own form
//	    keys   = [KEY, ...]               # or only which keys it holds
//	    writes = ["+KEY", "-KEY", ...]    # optional: entries written since the last expect of this sink
//	    content  = "..."                  # a sink rendering one file: exactly the file it renders
//	    contains = ["line", ...]          # or text the file holds (each line given must appear)
//	  }
//	}
type Test struct {
	File, Name string
	Decl       hcl.Range
	// Vars are the configuration's variables for the test, as NAME=VALUE.
	Vars  []string
	steps []step
}

// step is a given or an expect.
type step struct {
	at     time.Duration
	expect bool
	addr   string
	decl   hcl.Range
	// given
	add, update map[string]cty.Value
	del         []string
	// expect
	state      map[string]cty.Value
	keys       []string
	hasState   bool
	hasKeys    bool
	writes     []string
	hasWrites  bool
	content    *string
	contains   []string
	checkRange hcl.Range
}

// ParseFile reads the tests of one file and keeps it in p, for rendering
// diagnostics. A file too large or nested too deeply for the parser is
// refused as configuration files are (schema.CheckNesting).
func ParseFile(p *hclparse.Parser, path string) ([]*Test, hcl.Diagnostics) {
	src, err := readFile(path)
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Failed to read file",
			Detail: fmt.Sprintf("The configuration file %q could not be read.", path)}}
	}
	f, diags := schema.ParseConfig(src, path)
	if f != nil {
		p.AddFile(path, f)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return decodeFile(f, path, diags)
}

// readFile reads at most one byte more than schema.MaxConfigBytes, so
// that the parse reports a larger file as too large.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, schema.MaxConfigBytes+1))
}

// Parse reads the tests of a file's text (an editor's buffer) named name.
func Parse(src []byte, name string) ([]*Test, hcl.Diagnostics) {
	f, diags := schema.ParseConfig(src, name)
	if diags.HasErrors() {
		return nil, diags
	}
	return decodeFile(f, name, diags)
}

func decodeFile(f *hcl.File, path string, diags hcl.Diagnostics) ([]*Test, hcl.Diagnostics) {
	content, d := f.Body.Content(FileBlock.HCL())
	diags = append(diags, d...)
	var tests []*Test
	for _, b := range content.Blocks {
		t, d := decodeTest(path, b)
		diags = append(diags, d...)
		tests = append(tests, t)
	}
	if len(tests) == 0 && !diags.HasErrors() {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No tests",
			Detail: `A config test file holds one or more test "NAME" { ... } blocks.`, Subject: f.Body.MissingItemRange().Ptr()})
	}
	return tests, diags
}

// decodeTest decodes a test block. Its given and expect blocks are
// decoded one by one, in file order, so that each reports what is wrong
// with it alone.
func decodeTest(path string, b *hcl.Block) (*Test, hcl.Diagnostics) {
	t := &Test{File: path, Name: b.Labels[0], Decl: b.DefRange}
	raw, diags := b.Body.Content(testBlock.Body.HCL())
	c := &schema.Content{Attrs: raw.Attributes, Labels: b.Labels, Range: b.DefRange}
	if testVars.Has(c) {
		m, rng, d := testVars.Get(c)
		diags = append(diags, d...)
		for k, v := range m {
			if v.Type() != cty.String {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid variable value",
					Detail: fmt.Sprintf("Give variable %q as a string, as on the command line (-var %s=...).", k, k), Subject: rng.Ptr()})
				continue
			}
			t.Vars = append(t.Vars, k+"="+v.AsString())
		}
		sort.Strings(t.Vars)
	}
	for _, blk := range raw.Blocks {
		decode := decodeGiven
		if blk.Type == expectBlock.Name {
			decode = decodeExpect
		}
		s, d := decode(blk)
		diags = append(diags, d...)
		t.steps = append(t.steps, s)
	}
	// Stable: at one time, steps keep file order, so a given written
	// before an expect at the same time is seen by it.
	sort.SliceStable(t.steps, func(i, j int) bool { return t.steps[i].at < t.steps[j].at })
	return t, diags
}

// read reads attr into *dst when it is set, and reports whether it is.
func read[T any](attr *schema.Attr[T], c *schema.Content, dst *T, diags *hcl.Diagnostics) bool {
	if !attr.Has(c) {
		return false
	}
	v, _, d := attr.Get(c)
	*dst = v
	*diags = append(*diags, d...)
	return true
}

// nameRange is where attr's name is written in c.
func nameRange[T any](attr *schema.Attr[T], c *schema.Content) hcl.Range {
	return c.Attrs[attr.Name()].NameRange
}

func decodeGiven(b *hcl.Block) (step, hcl.Diagnostics) {
	c, diags := schema.Decode(b.Body, givenBlock.Body, nil, b.DefRange)
	s := step{addr: b.Labels[0], decl: b.DefRange}
	read(givenAt, c, &s.at, &diags)
	read(givenAdd, c, &s.add, &diags)
	read(givenUpdate, c, &s.update, &diags)
	read(givenDelete, c, &s.del, &diags)
	if s.add == nil && s.update == nil && s.del == nil && !diags.HasErrors() {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Empty given",
			Detail: "Give add, update or delete: what the source reports at this time.", Subject: c.Range.Ptr()})
	}
	return s, diags
}

func decodeExpect(b *hcl.Block) (step, hcl.Diagnostics) {
	c, diags := schema.Decode(b.Body, expectBlock.Body, nil, b.DefRange)
	s := step{addr: b.Labels[0], decl: b.DefRange, expect: true, checkRange: b.DefRange}
	read(expectAt, c, &s.at, &diags)
	if s.hasState = read(expectState, c, &s.state, &diags); s.hasState {
		s.checkRange = nameRange(expectState, c)
	}
	if s.hasKeys = read(expectKeys, c, &s.keys, &diags); s.hasKeys {
		s.checkRange = nameRange(expectKeys, c)
	}
	if s.hasWrites = read(expectWrites, c, &s.writes, &diags); s.hasWrites && !s.hasState && !s.hasKeys {
		s.checkRange = nameRange(expectWrites, c)
	}
	var badContent bool // content that is no string: contains is not read
	if expectContent.Has(c) {
		text, _, d := expectContent.Get(c)
		diags = append(diags, d...)
		if !d.HasErrors() {
			s.content, s.checkRange = &text, nameRange(expectContent, c)
		}
		badContent = len(d) > 0 && d[len(d)-1].Summary == "Invalid content"
	}
	if !badContent && read(expectContains, c, &s.contains, &diags) {
		if s.contains == nil {
			s.contains = []string{}
		}
		if s.content == nil {
			s.checkRange = nameRange(expectContains, c)
		}
	}
	switch {
	case s.hasState && s.hasKeys:
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Conflicting expectations",
			Detail: "Give state (keys and values) or keys (keys only), not both.", Subject: nameRange(expectKeys, c).Ptr()})
	case !s.hasState && !s.hasKeys && !s.hasWrites && s.content == nil && s.contains == nil:
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Empty expect",
			Detail: "Give state, keys, writes, content or contains: what the sink's target holds or wrote by this time.", Subject: c.Range.Ptr()})
	}
	return s, diags
}

// readContent reads the content of a sink rendering one file (template).
func readContent(expr hcl.Expression) (string, hcl.Diagnostics) {
	v, diags := expr.Value(nil)
	if diags.HasErrors() {
		return "", diags
	}
	if v.Type() != cty.String || v.IsNull() || !v.IsKnown() {
		return "", append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid content",
			Detail: "Give content as a string, such as a heredoc: content = <<-EOT ... EOT.", Subject: expr.Range().Ptr()})
	}
	return v.AsString(), diags
}

// literalMap reads an object of KEY = VALUE with no references.
func literalMap(name string) func(hcl.Expression) (map[string]cty.Value, hcl.Diagnostics) {
	return func(expr hcl.Expression) (map[string]cty.Value, hcl.Diagnostics) {
		v, diags := expr.Value(nil)
		if diags.HasErrors() {
			return nil, diags
		}
		if !v.IsKnown() || v.IsNull() || !(v.Type().IsObjectType() || v.Type().IsMapType()) {
			return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid map",
				Detail: fmt.Sprintf("Give %s as { KEY = VALUE, ... } with quoted keys where needed.", name), Subject: expr.Range().Ptr()})
		}
		out := map[string]cty.Value{}
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			out[k.AsString()] = e
		}
		return out, diags
	}
}

// literalStrings reads a list of strings with no references.
func literalStrings(name string) func(hcl.Expression) ([]string, hcl.Diagnostics) {
	return func(expr hcl.Expression) ([]string, hcl.Diagnostics) {
		v, diags := expr.Value(nil)
		if diags.HasErrors() {
			return nil, diags
		}
		bad := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid list",
			Detail: fmt.Sprintf("Give %s as a list of strings: [\"a\", \"b\"].", name), Subject: expr.Range().Ptr()}
		if !v.IsKnown() || v.IsNull() || !(v.Type().IsTupleType() || v.Type().IsListType()) {
			return nil, append(diags, bad)
		}
		out := []string{}
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if e.Type() != cty.String || e.IsNull() || !e.IsKnown() {
				return nil, append(diags, bad)
			}
			out = append(out, e.AsString())
		}
		return out, diags
	}
}

// Check is what `pipeline test` says of a test file's text before running
// it: its blocks and values and, when addrs (the addresses of the
// configuration's nodes) is not nil, that each given names one of its
// sources and each expect one of its sinks. The language server checks
// an open test file with it.
func Check(name string, src []byte, addrs []string) hcl.Diagnostics {
	tests, diags := Parse(src, name)
	if addrs == nil || diags.HasErrors() {
		return diags
	}
	for _, t := range tests {
		diags = append(diags, CheckAddresses(t, addrs)...)
	}
	return diags
}
