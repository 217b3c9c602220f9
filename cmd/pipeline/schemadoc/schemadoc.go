package schemadoc

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/pipeline/pipeline/cmd/pipeline/configtest"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// FormatVersion is the version of `pipeline schema --json`
// (docs/editors.md): the minor rises when fields are added, the major
// when a field changes or goes. 1.1 added attributes' "enum", 1.2 types'
// "outputs", 1.3 "test_file".
const FormatVersion = "1.3"

// Doc is the whole language: `pipeline schema --json`.
type Doc struct {
	FormatVersion string `json:"format_version"`
	Cluster       Block  `json:"cluster"`
	Leader        Block  `json:"leader_election"`
	Types         []Type `json:"types"`
	// TestFile is the body of a config test file (NAME.test.hcl).
	TestFile Block `json:"test_file"`
}

// Type is one node type.
type Type struct {
	Kind    string `json:"kind"`
	Type    string `json:"type"`
	Summary string `json:"summary"`
	Doc     string `json:"doc,omitempty"`
	Output  string `json:"output,omitempty"`
	// Outputs: what the type emits in each case of one attribute, when
	// that attribute decides it (source "files": format).
	Outputs []OutputCase `json:"outputs,omitempty"`
	Accepts []string     `json:"accepts,omitempty"`
	Body    Block        `json:"body"`
}

// OutputCase is what a type emits when one attribute has some values.
type OutputCase struct {
	Attribute string   `json:"attribute"`
	Values    []string `json:"values"`
	Output    string   `json:"output"`
}

// Block is a block's body: its attributes and nested blocks.
type Block struct {
	Attributes []schema.AttrInfo `json:"attributes"`
	Blocks     []Nested          `json:"blocks,omitempty"`
}

// Nested is a nested block.
type Nested struct {
	Name     string   `json:"name"`
	Labels   []string `json:"labels,omitempty"`
	Doc      string   `json:"doc,omitempty"`
	Repeated bool     `json:"repeated"`
	Required bool     `json:"required"`
	Body     Block    `json:"body"`
}

// Describe describes the language: the top-level blocks, every node type
// of reg, and config test files.
func Describe(reg *node.Registry) Doc {
	d := Doc{FormatVersion: FormatVersion, Cluster: describeBlock(schema.ClusterBlock),
		Leader: describeBlock(schema.LeaderElectionBlock), TestFile: describeBlock(configtest.FileBlock)}
	for _, s := range reg.All() {
		t := Type{Kind: string(s.Kind), Type: s.Type, Summary: s.Summary, Doc: s.Doc, Output: string(s.Output),
			Body: describeBlock(s.FullBody())}
		for _, a := range s.Accepts {
			t.Accepts = append(t.Accepts, string(a))
		}
		for _, c := range s.Outputs {
			t.Outputs = append(t.Outputs, OutputCase{Attribute: c.Attr, Values: c.Values, Output: string(c.Output)})
		}
		d.Types = append(d.Types, t)
	}
	return d
}

func describeBlock(b schema.Block) Block {
	out := Block{Attributes: []schema.AttrInfo{}}
	for _, a := range b.Attrs {
		out.Attributes = append(out.Attributes, *a.Info())
	}
	for _, bt := range b.Blocks {
		out.Blocks = append(out.Blocks, Nested{Name: bt.Name, Labels: bt.Labels, Doc: bt.Doc, Repeated: bt.Many,
			Required: bt.Required, Body: describeBlock(bt.Body)})
	}
	return out
}

// WriteText writes d for people: `pipeline schema`.
func WriteText(w io.Writer, d Doc) {
	for _, t := range d.Types {
		fmt.Fprintf(w, "%s %q  %s\n", t.Kind, t.Type, t.Summary)
		if t.Output != "" {
			fmt.Fprintf(w, "  emits: %s\n", emitsText(t, "%s"))
		}
		if len(t.Accepts) > 0 {
			fmt.Fprintf(w, "  accepts: %s\n", strings.Join(t.Accepts, ", "))
		}
		writeAttrsText(w, t.Body, "    ")
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "cluster  Kubernetes API server credentials\n")
	writeAttrsText(w, d.Cluster, "    ")
	fmt.Fprintf(w, "\nleader_election  only the holder of a Kubernetes Lease writes to the sinks\n")
	writeAttrsText(w, d.Leader, "    ")
	fmt.Fprintf(w, "\nconfig test files (NAME.test.hcl, run by `pipeline test`)\n")
	writeAttrsText(w, d.TestFile, "    ")
}

// emitsText says what a type emits: its output, or each case of the
// attribute that decides it, as in `objects with format "kubernetes" (the
// default); records with format "json" or "csv"`. code formats the
// attribute's name.
func emitsText(t Type, code string) string {
	if len(t.Outputs) == 0 {
		return t.Output
	}
	cases := make([]string, 0, len(t.Outputs))
	for _, c := range t.Outputs {
		def := ""
		values := make([]string, len(c.Values))
		for i, v := range c.Values {
			values[i] = strconv.Quote(v)
			if len(c.Values) == 1 && attrDefault(t.Body, c.Attribute) == values[i] {
				def = " (the default)"
			}
		}
		cases = append(cases, fmt.Sprintf("%s with "+code+" %s%s", c.Output, c.Attribute, orList(values), def))
	}
	return strings.Join(cases, "; ")
}

// orList joins ["a", "b", "c"] as "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

func attrDefault(b Block, name string) string {
	for _, a := range b.Attributes {
		if a.Name == name {
			return a.Default
		}
	}
	return ""
}

func writeAttrsText(w io.Writer, b Block, indent string) {
	for _, a := range b.Attributes {
		extra := ""
		if a.Required {
			extra = " (required)"
		} else if a.Default != "" {
			extra = " = " + a.Default
		}
		fmt.Fprintf(w, "%s%-22s %s%s\n", indent, a.Name, a.Type, extra)
	}
	for _, nb := range b.Blocks {
		fmt.Fprintf(w, "%s%s { }%s\n", indent, nb.Name, map[bool]string{true: " (repeatable)"}[nb.Repeated])
		writeAttrsText(w, nb.Body, indent+"    ")
	}
}

// WriteMarkdown writes d as docs/reference.md.
func WriteMarkdown(w io.Writer, d Doc) {
	fmt.Fprintln(w, "# Configuration reference")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Generated from the registry by `make docs` (`pipeline schema --markdown`); do not edit by hand.")
	fmt.Fprintln(w, "A test fails when this file is stale.")
	for _, k := range schema.Kinds {
		fmt.Fprintf(w, "\n## %ss\n", strings.ToUpper(string(k)[:1])+string(k)[1:])
		for _, t := range d.Types {
			if t.Kind != string(k) {
				continue
			}
			fmt.Fprintf(w, "\n### %s \"%s\"\n\n%s\n", t.Kind, t.Type, t.Summary)
			if t.Doc != "" {
				fmt.Fprintf(w, "\n%s\n", t.Doc)
			}
			fmt.Fprintln(w)
			if t.Output != "" {
				fmt.Fprintf(w, "- Emits: %s\n", emitsText(t, "`%s`"))
			}
			if len(t.Accepts) > 0 {
				fmt.Fprintf(w, "- Accepts: %s\n", strings.Join(t.Accepts, ", "))
			}
			writeAttrsMarkdown(w, t.Body, "")
		}
	}
	fmt.Fprintln(w, "\n## Clusters\n\n### cluster \"NAME\"\n\nCredentials of a Kubernetes API server, referenced as `cluster.NAME`.")
	writeAttrsMarkdown(w, d.Cluster, "")
	fmt.Fprintln(w, "\n## Leader election\n\n### leader_election\n\nAt most one block. Several instances of the configuration run side by side "+
		"(`pipeline manifests --mode hub`); every instance keeps its sources synced, and only the holder of a "+
		"coordination.k8s.io Lease writes to the sinks. Leadership shows on `/readyz` and as `pipeline_leader_leading`. "+
		"A hot reload cannot add, remove or change this block (nor where the cluster block it uses connects): such a reload is rejected "+
		"and the instance goes on with the settings it started with; restart the instances to apply a change.")
	writeAttrsMarkdown(w, d.Leader, "")
	fmt.Fprintln(w, "\n## Config tests\n\nThe blocks of a config test file, `NAME.test.hcl` beside the configuration, which `pipeline test` runs "+
		"(docs/config-tests.md). A value is a literal: it may not use variables, locals or functions.")
	for _, nb := range d.TestFile.Blocks {
		fmt.Fprintf(w, "\n### %s\n\n%s\n", header(nb), nb.Doc)
		writeAttrsMarkdown(w, nb.Body, "")
	}
}

// header is a nested block's header as written: `given "source" { ... }`.
func header(nb Nested) string {
	h := nb.Name
	for _, l := range nb.Labels {
		h += fmt.Sprintf(" %q", strings.ToUpper(l))
	}
	return h
}

func writeAttrsMarkdown(w io.Writer, b Block, prefix string) {
	if len(b.Attributes) > 0 {
		fmt.Fprintln(w, "\n| attribute | type | default | description |\n|---|---|---|---|")
	}
	for _, a := range b.Attributes {
		def := "`" + a.Default + "`"
		switch {
		case a.Required:
			def = "required"
		case a.Default == "":
			def = ""
		}
		doc := a.Doc
		if a.Sensitive {
			doc += " Sensitive: never printed or logged."
		}
		if a.Example != "" {
			doc += " Example: `" + a.Example + "`."
		}
		if len(a.Roots) > 0 {
			doc += " May use: " + strings.Join(a.Roots, ", ") + "."
		}
		fmt.Fprintf(w, "| `%s%s` | %s | %s | %s |\n", prefix, a.Name, a.Type, def, strings.ReplaceAll(doc, "|", `\|`))
	}
	for _, nb := range b.Blocks {
		rep := ""
		if nb.Repeated {
			rep = " (repeatable)"
		}
		fmt.Fprintf(w, "\nBlock `%s%s { ... }`%s: %s\n", prefix, header(nb), rep, nb.Doc)
		writeAttrsMarkdown(w, nb.Body, prefix+nb.Name+".")
	}
}
