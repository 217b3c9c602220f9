package main

import (
	"fmt"
	"sort"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
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
type configTest struct {
	file, name string
	decl       hcl.Range
	vars       []string
	steps      []testStep
}

// testStep is a given or an expect.
type testStep struct {
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

var (
	testFileSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "test", LabelNames: []string{"name"}}}}
	testSchema     = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "vars"}},
		Blocks: []hcl.BlockHeaderSchema{{Type: "given", LabelNames: []string{"source"}},
			{Type: "expect", LabelNames: []string{"sink"}}},
	}
	givenSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "at", Required: true},
		{Name: "add"}, {Name: "update"}, {Name: "delete"}}}
	expectSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "at", Required: true},
		{Name: "state"}, {Name: "keys"}, {Name: "writes"},
		{Name: "content"}, {Name: "contains"}}}
)

// parseTestFile reads the tests of one file.
func parseTestFile(p *hclparse.Parser, path string) ([]*configTest, hcl.Diagnostics) {
	f, diags := p.ParseHCLFile(path)
	if diags.HasErrors() {
		return nil, diags
	}
	content, d := f.Body.Content(testFileSchema)
	diags = append(diags, d...)
	var tests []*configTest
	for _, b := range content.Blocks {
		t, d := decodeTest(path, b)
		diags = append(diags, d...)
		tests = append(tests, t)
	}
	if len(content.Blocks) == 0 && !diags.HasErrors() {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No tests",
			Detail: `A config test file holds one or more test "NAME" { ... } blocks.`, Subject: f.Body.MissingItemRange().Ptr()})
	}
	return tests, diags
}

func decodeTest(path string, b *hcl.Block) (*configTest, hcl.Diagnostics) {
	t := &configTest{file: path, name: b.Labels[0], decl: b.DefRange}
	content, diags := b.Body.Content(testSchema)
	if a := content.Attributes["vars"]; a != nil {
		m, d := literalMap(a)
		diags = append(diags, d...)
		for k, v := range m {
			if v.Type() != cty.String {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid variable value",
					Detail: fmt.Sprintf("Give variable %q as a string, as on the command line (-var %s=...).", k, k), Subject: a.Expr.Range().Ptr()})
				continue
			}
			t.vars = append(t.vars, k+"="+v.AsString())
		}
		sort.Strings(t.vars)
	}
	for _, blk := range content.Blocks {
		var s testStep
		var d hcl.Diagnostics
		if blk.Type == "given" {
			s, d = decodeGiven(blk)
		} else {
			s, d = decodeExpect(blk)
		}
		diags = append(diags, d...)
		t.steps = append(t.steps, s)
	}
	// Stable: at one time, steps keep file order, so a given written
	// before an expect at the same time is seen by it.
	sort.SliceStable(t.steps, func(i, j int) bool { return t.steps[i].at < t.steps[j].at })
	return t, diags
}

func decodeGiven(b *hcl.Block) (testStep, hcl.Diagnostics) {
	s := testStep{addr: b.Labels[0], decl: b.DefRange}
	content, diags := b.Body.Content(givenSchema)
	s.at, diags = decodeAt(content.Attributes["at"], diags)
	var d hcl.Diagnostics
	if a := content.Attributes["add"]; a != nil {
		s.add, d = literalMap(a)
		diags = append(diags, d...)
	}
	if a := content.Attributes["update"]; a != nil {
		s.update, d = literalMap(a)
		diags = append(diags, d...)
	}
	if a := content.Attributes["delete"]; a != nil {
		s.del, d = literalStrings(a)
		diags = append(diags, d...)
	}
	if s.add == nil && s.update == nil && s.del == nil && !diags.HasErrors() {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Empty given",
			Detail: "Give add, update or delete: what the source reports at this time.", Subject: b.DefRange.Ptr()})
	}
	return s, diags
}

func decodeExpect(b *hcl.Block) (testStep, hcl.Diagnostics) {
	s := testStep{addr: b.Labels[0], decl: b.DefRange, expect: true, checkRange: b.DefRange}
	content, diags := b.Body.Content(expectSchema)
	s.at, diags = decodeAt(content.Attributes["at"], diags)
	var d hcl.Diagnostics
	if a := content.Attributes["state"]; a != nil {
		s.state, d = literalMap(a)
		s.hasState, s.checkRange = true, a.NameRange
		diags = append(diags, d...)
	}
	if a := content.Attributes["keys"]; a != nil {
		s.keys, d = literalStrings(a)
		s.hasKeys, s.checkRange = true, a.NameRange
		diags = append(diags, d...)
	}
	if a := content.Attributes["writes"]; a != nil {
		s.writes, d = literalStrings(a)
		s.hasWrites = true
		if !s.hasState && !s.hasKeys {
			s.checkRange = a.NameRange
		}
		diags = append(diags, d...)
	}
	d = decodeContent(&s, content.Attributes)
	diags = append(diags, d...)
	switch {
	case s.hasState && s.hasKeys:
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Conflicting expectations",
			Detail: "Give state (keys and values) or keys (keys only), not both.", Subject: content.Attributes["keys"].NameRange.Ptr()})
	case !s.hasState && !s.hasKeys && !s.hasWrites && s.content == nil && s.contains == nil:
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Empty expect",
			Detail: "Give state, keys, writes, content or contains: what the sink's target holds or wrote by this time.", Subject: b.DefRange.Ptr()})
	}
	return s, diags
}

// decodeContent reads content and contains, the rendered file of a sink
// that renders one (sink "template").
func decodeContent(s *testStep, attrs hcl.Attributes) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if a := attrs["content"]; a != nil {
		v, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		if !d.HasErrors() && (v.Type() != cty.String || v.IsNull() || !v.IsKnown()) {
			return append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid content",
				Detail: "Give content as a string, such as a heredoc: content = <<-EOT ... EOT.", Subject: a.Expr.Range().Ptr()})
		}
		if !d.HasErrors() {
			text := v.AsString()
			s.content, s.checkRange = &text, a.NameRange
		}
	}
	if a := attrs["contains"]; a != nil {
		var d hcl.Diagnostics
		s.contains, d = literalStrings(a)
		if s.contains == nil {
			s.contains = []string{}
		}
		if s.content == nil {
			s.checkRange = a.NameRange
		}
		diags = append(diags, d...)
	}
	return diags
}

func decodeAt(a *hcl.Attribute, diags hcl.Diagnostics) (time.Duration, hcl.Diagnostics) {
	if a == nil {
		return 0, diags
	}
	v, d := a.Expr.Value(nil)
	if d.HasErrors() {
		return 0, append(diags, d...)
	}
	if v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
		if at, err := time.ParseDuration(v.AsString()); err == nil && at >= 0 {
			return at, diags
		}
	}
	return 0, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid time",
		Detail: `Give the virtual time since the test started as a duration string, such as "0s", "150ms" or "31s".`, Subject: a.Expr.Range().Ptr()})
}

// literalMap reads an object of KEY = VALUE with no references.
func literalMap(a *hcl.Attribute) (map[string]cty.Value, hcl.Diagnostics) {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return nil, diags
	}
	if !v.IsKnown() || v.IsNull() || !(v.Type().IsObjectType() || v.Type().IsMapType()) {
		return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid map",
			Detail: fmt.Sprintf("Give %s as { KEY = VALUE, ... } with quoted keys where needed.", a.Name), Subject: a.Expr.Range().Ptr()})
	}
	out := map[string]cty.Value{}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		out[k.AsString()] = e
	}
	return out, diags
}

// literalStrings reads a list of strings with no references.
func literalStrings(a *hcl.Attribute) ([]string, hcl.Diagnostics) {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return nil, diags
	}
	bad := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid list",
		Detail: fmt.Sprintf("Give %s as a list of strings: [\"a\", \"b\"].", a.Name), Subject: a.Expr.Range().Ptr()}
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
