package lsp

import (
	"fmt"
	"sort"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// topLevel are the blocks a configuration file holds, with what each is.
var topLevel = []struct{ name, labels, doc string }{
	{"source", `"${1:type}" "${2:name}"`, "A node that reads the world (Kubernetes, files, NATS KV, static records)."},
	{"transform", `"${1:type}" "${2:name}"`, "A node that reshapes its input (extract, filter, debounce, grace_period)."},
	{"sink", `"${1:type}" "${2:name}"`, "A node that keeps a target equal to its input (eBPF map, NATS, audit log)."},
	{"variable", `"${1:name}"`, "An input of the configuration: -var name=value or PIPELINE_VAR_name."},
	{"locals", "", "Named values computed once when the configuration loads."},
	{"cluster", `"${1:name}"`, "Kubernetes API server credentials for kubernetes sources."},
	{"leader_election", "", "Only the holder of a Kubernetes Lease writes to the sinks."},
}

// variableBlock describes a variable block's attributes (the loader
// decodes them by hand, so they have no declaration to read).
var variableBlock = schema.Block{Attrs: []schema.Attribute{
	schema.String("type").Doc("The type constraint: string, number, bool, list(string), map(string), object({...}) or any."),
	schema.String("default").Doc("The value when none is set; a variable without a default must be set."),
	schema.String("description").Doc("What the variable is for."),
	schema.Bool("sensitive").Doc("Redact the value, and everything derived from it, from output.").Default(false, "false"),
}}

// blockAt returns the schema of the body the frames lead to, and the node
// spec of the outermost block when it is a node. In a config test file
// the frames start from the file's body, testFile (nil in a configuration
// file).
func blockAt(reg *node.Registry, testFile *schema.Block, frames []*frame) (schema.Block, *node.Spec, bool) {
	if testFile != nil {
		body := *testFile
		for _, f := range frames {
			bt := nestedType(body, f.name)
			if bt == nil {
				return schema.Block{}, nil, false
			}
			body = bt.Body
		}
		return body, nil, true
	}
	if len(frames) == 0 {
		return schema.Block{}, nil, false
	}
	var body schema.Block
	var spec *node.Spec
	top := frames[0]
	switch {
	case isNodeKind(top.name) && len(top.labels) > 0:
		s, ok := reg.Lookup(schema.Kind(top.name), top.labels[0])
		if !ok {
			return schema.Block{}, nil, false
		}
		spec, body = &s, s.FullBody()
	case top.name == "cluster":
		body = schema.ClusterBlock
	case top.name == "leader_election":
		body = schema.LeaderElectionBlock
	case top.name == "variable":
		body = variableBlock
	default:
		return schema.Block{}, nil, false
	}
	for _, f := range frames[1:] {
		bt := nestedType(body, f.name)
		if bt == nil {
			return schema.Block{}, spec, false
		}
		body = bt.Body
	}
	return body, spec, true
}

func nestedType(b schema.Block, name string) *schema.BlockType {
	for _, bt := range b.Blocks {
		if bt.Name == name {
			return bt
		}
	}
	return nil
}

func attrInfo(b schema.Block, name string) *schema.AttrInfo {
	if a := b.Attr(name); a != nil {
		return a.Info()
	}
	return nil
}

// attrDetail is an attribute's one-line description: type and
// required or default.
func attrDetail(a *schema.AttrInfo) string {
	switch {
	case a.Required:
		return a.Type + " (required)"
	case a.Default != "":
		return a.Type + " = " + a.Default
	}
	return a.Type + " (optional)"
}

// attrMarkdown is an attribute's hover text.
func attrMarkdown(a *schema.AttrInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** `%s`", a.Name, a.Type)
	switch {
	case a.Required:
		b.WriteString(" (required)")
	case a.Default != "":
		fmt.Fprintf(&b, "  \ndefault: `%s`", a.Default)
	}
	if a.Sensitive {
		b.WriteString("  \nsensitive: redacted from every output")
	}
	if a.Doc != "" {
		b.WriteString("\n\n" + a.Doc)
	}
	if a.Example != "" {
		fmt.Fprintf(&b, "\n\nExample: `%s = %s`", a.Name, a.Example)
	}
	if len(a.Roots) > 0 {
		fmt.Fprintf(&b, "\n\nEvaluated per record; may use %s.", strings.Join(a.Roots, ", "))
	}
	return b.String()
}

// signature writes a function's signature: "cidrhost(prefix string, hostnum number) string".
func signature(name string, f function.Function) string {
	var params []string
	var types []cty.Type
	for _, p := range f.Params() {
		params = append(params, p.Name+" "+p.Type.FriendlyName())
		types = append(types, p.Type)
	}
	if vp := f.VarParam(); vp != nil {
		params = append(params, vp.Name+"... "+vp.Type.FriendlyName())
	}
	sig := name + "(" + strings.Join(params, ", ") + ")"
	if ret, err := returnType(f, types); err == nil && ret != cty.DynamicPseudoType {
		sig += " " + ret.FriendlyName()
	}
	return sig
}

// returnType asks a function its static return type; some functions
// panic on placeholder arguments, which must not take the server down.
func returnType(f function.Function, types []cty.Type) (t cty.Type, err error) {
	defer func() {
		if recover() != nil {
			t, err = cty.DynamicPseudoType, fmt.Errorf("no static type")
		}
	}()
	return f.ReturnType(types)
}

// functionNames returns the functions' names, sorted.
func functionNames(fs map[string]function.Function) []string {
	names := make([]string, 0, len(fs))
	for n := range fs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
