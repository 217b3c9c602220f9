package kobject

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"k8s.io/client-go/util/jsonpath"

	"github.com/pipeline/pipeline/schema"
)

// The JSONPath list attributes.
var (
	IndexByAttr = schema.StringList("index_by").
			Doc("JSONPath expressions (kubectl syntax) whose values, joined with `:`, form each record's key. The default key is `namespace/name` (`name` for cluster-scoped objects). Objects missing a path are skipped and counted. When several objects share a key, the one with the smallest namespace/name provides the value.").
			Example(`["{.metadata.namespace}", "{.metadata.name}"]`)
	IgnoreFieldsAttr = schema.StringList("ignore_fields").
				Doc("JSONPath expressions of fields removed from every object before it is stored or emitted, to save memory and to ignore changes in them. Paths may use `[*]` and `.*`; `['a.b/c']` quotes a key holding dots.").
				Example(`["{.metadata.managedFields}", "{.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']}"]`)
)

// NormalizePath turns the accepted spellings of one JSONPath expression into
// client-go's syntax: braces are added when missing ("metadata.name" becomes
// "{.metadata.name}"), and bracket-quoted keys ("['app.kubernetes.io/name']"),
// which client-go's parser splits at dots, become escaped fields.
func NormalizePath(expr string) (string, error) {
	e := strings.TrimSpace(expr)
	if e == "" {
		return "", errors.New("the expression is empty")
	}
	if !strings.Contains(e, "{") {
		if !strings.HasPrefix(e, ".") && !strings.HasPrefix(e, "[") {
			e = "." + e
		}
		e = "{" + e + "}"
	}
	var b strings.Builder
	for {
		i := strings.Index(e, "['")
		if i < 0 {
			b.WriteString(e)
			break
		}
		j := strings.Index(e[i+2:], "']")
		if j < 0 {
			return "", errors.New("unterminated ['...'] key")
		}
		key := e[i+2 : i+2+j]
		b.WriteString(e[:i])
		b.WriteString(".")
		b.WriteString(strings.ReplaceAll(key, ".", `\.`))
		e = e[i+2+j+2:]
	}
	return b.String(), nil
}

// parsePath parses one normalized expression and returns the node list
// inside its single pair of braces.
func parsePath(expr string) (*jsonpath.ListNode, error) {
	p, err := jsonpath.Parse("path", expr)
	if err != nil {
		return nil, err
	}
	if len(p.Root.Nodes) != 1 {
		return nil, errors.New("write exactly one {...} expression; list several entries instead of joining them")
	}
	list, ok := p.Root.Nodes[0].(*jsonpath.ListNode)
	if !ok || len(list.Nodes) == 0 {
		return nil, errors.New("the expression must be written in braces, such as {.metadata.name}")
	}
	return list, nil
}

// listElemRanges returns the source range of each element of a list
// attribute written as a literal list, or the attribute's range for each
// element otherwise.
func listElemRanges(c *schema.Content, name string, n int, whole hcl.Range) []hcl.Range {
	out := make([]hcl.Range, n)
	for i := range out {
		out[i] = whole
	}
	attr, ok := c.Attrs[name]
	if !ok {
		return out
	}
	exprs, diags := hcl.ExprList(attr.Expr)
	if diags.HasErrors() || len(exprs) != n {
		return out
	}
	for i, e := range exprs {
		out[i] = e.Range()
	}
	return out
}

func pathDiag(summary, attr, expr string, err error, rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary,
		Detail:  fmt.Sprintf("%s entry %q: %s. Write a JSONPath such as \"{.metadata.name}\" or \"{.metadata.labels['app.kubernetes.io/name']}\".", attr, expr, err),
		Subject: rng.Ptr()}
}

// ReadPrefixes returns the leading field names of each path a JSONPath
// template reads ("{.status.podIPs[*].ip}" reads [status podIPs]); an
// action that is not a plain path (range, a filter, recursive descent)
// reads the whole object, returned as an empty prefix. ok is false when
// the template does not parse.
func ReadPrefixes(template string) (prefixes [][]string, ok bool) {
	p, err := jsonpath.Parse("read", template)
	if err != nil {
		return nil, false
	}
	for _, n := range p.Root.Nodes {
		switch x := n.(type) {
		case *jsonpath.ListNode:
			prefixes = append(prefixes, fieldPrefix(x.Nodes))
		case *jsonpath.TextNode:
		default:
			prefixes = append(prefixes, nil)
		}
	}
	return prefixes, true
}

// fieldPrefix returns the field names at the start of a path's nodes.
func fieldPrefix(nodes []jsonpath.Node) []string {
	var out []string
	for _, n := range nodes {
		f, ok := n.(*jsonpath.FieldNode)
		if !ok {
			return out
		}
		if f.Value != "" {
			out = append(out, f.Value)
		}
	}
	return out
}

// Prefixes returns the leading field names of each compiled path.
func (k *Keyer) Prefixes() [][]string {
	var out [][]string
	for _, e := range k.exprs {
		ps, ok := ReadPrefixes(e)
		if !ok {
			ps = [][]string{nil}
		}
		out = append(out, ps...)
	}
	return out
}
