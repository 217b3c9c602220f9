package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
)

func newGraphCmd() *cobra.Command {
	var format string
	var vars []string
	cmd := &cobra.Command{
		Use:   "graph [--format dot|mermaid] PATH...",
		Short: "Print the compiled graph as Graphviz DOT or Mermaid",
		Args:  needPaths(),
		RunE: func(cmd *cobra.Command, args []string) error {
			l := load(args, vars)
			if l.diags.HasErrors() {
				view.WriteDiagsText(cmd.ErrOrStderr(), l.files, l.diags)
				return exitError{1}
			}
			switch format {
			case "dot":
				writeDOT(cmd.OutOrStdout(), l.graph)
			case "mermaid":
				writeMermaid(cmd.OutOrStdout(), l.graph)
			default:
				return fmt.Errorf("unknown format %q: use dot or mermaid", format)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "dot", "output format: dot or mermaid")
	cmd.Flags().StringArrayVar(&vars, "var", nil, "set a variable: -var name=value")
	return cmd
}

var shapes = map[node.Kind]string{node.KindSource: "invhouse", node.KindTransform: "box", node.KindSink: "house"}

func writeDOT(w io.Writer, g *graph.Graph) {
	fmt.Fprintln(w, "digraph pipeline {")
	fmt.Fprintln(w, "  rankdir=LR;")
	fmt.Fprintln(w, `  node [fontname="Helvetica"];`)
	for _, n := range g.Nodes {
		label := dotID(n.Address)
		if r := reads(n); r != "" {
			label = strings.TrimSuffix(label, `"`) + `\n` + strings.TrimPrefix(dotID(r), `"`)
		}
		fmt.Fprintf(w, "  %s [label=%s, shape=%s];\n", dotID(n.Address), label, shapes[n.Kind])
	}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs { // a fan-in draws one edge per input
			fmt.Fprintf(w, "  %s -> %s [label=%s];\n", dotID(in.Address), dotID(n.Address), dotID(string(in.Emits)))
		}
	}
	fmt.Fprintln(w, "}")
}

// reads describes what a selectively decoding source decodes: the fields
// the graph reads, or whole objects.
func reads(n *graph.Node) string {
	if _, ok := n.Source.(node.Projector); !ok {
		return ""
	}
	if n.Projection == nil {
		return "reads whole objects"
	}
	return "reads " + strings.Join(n.Projection.List(), " ")
}

func dotID(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func writeMermaid(w io.Writer, g *graph.Graph) {
	fmt.Fprintln(w, "flowchart LR")
	ids := map[*graph.Node]string{}
	for i, n := range g.Nodes {
		ids[n] = fmt.Sprintf("n%d", i)
		open, closing := "[", "]"
		switch n.Kind {
		case node.KindSource:
			open, closing = "([", "])"
		case node.KindSink:
			open, closing = "[(", ")]"
		}
		label := n.Address
		if r := reads(n); r != "" {
			label += "<br/>" + r
		}
		fmt.Fprintf(w, "  %s%s\"%s\"%s\n", ids[n], open, label, closing)
	}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			fmt.Fprintf(w, "  %s -->|%s| %s\n", ids[in], in.Emits, ids[n])
		}
	}
}
