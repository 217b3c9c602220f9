package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"

	"github.com/pipeline/pipeline/cmd/pipeline/planview"
	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// reloadPrelude is what every configuration of TestReloadEveryAttribute
// holds beside the node under test, named KIND.TYPE.t: clusters and inputs
// for its references to point at.
const reloadPrelude = `
cluster "prod" {
  endpoint = "https://10.0.0.1:6443"
  token    = "tok"
}
cluster "other" {
  endpoint = "https://10.0.0.2:6443"
  token    = "tok"
}
source "static" "in" {
  records = { a = { ip = "10.0.0.1", n = 1 } }
}
source "static" "other" {
  records = { b = { ip = "10.0.0.2", n = 2 } }
}
source "files" "objs" {
  paths       = ["objs/*.yaml"]
  allow_empty = true
}
`

// reloadBases are valid bodies of node types whose required attributes'
// examples alone are not (attributes only valid together, or exclusive,
// or blocks that must appear). Each attribute of a type must be set in a
// base, or be addable to one; each nested block must appear in one. A
// type missing here starts from its required attributes' examples.
var reloadBases = map[string][]string{
	"source.kubernetes": {
		`resource = "pods"`,
		"api_version = \"apps/v1\"\nkind = \"Deployment\"",
		"resource = \"configmaps\"\nnamespace = \"shop\"\nname = \"cfg\"",
		"resource = \"pods\"\nselector {\n  key = \"app\"\n  operator = \"in\"\n  values = [\"web\"]\n}",
	},
	"source.files": {
		`paths = ["objs/*.yaml"]`,
		"paths = [\"data/*.csv\"]\nformat = \"csv\"\nkey = item.ip",
		"paths = [\"objs/*.yaml\"]\nselector {\n  key = \"app\"\n  operator = \"in\"\n  values = [\"web\"]\n}",
	},
	"source.nats_kv": {
		"bucket = \"b\"\nurl = \"nats://127.0.0.1:4222\"",
		"bucket = \"b\"\nurl = \"nats://127.0.0.1:4222\"\nuser = \"u\"\npassword = \"p\"",
		"bucket = \"b\"\nurl = \"tls://127.0.0.1:4222\"\ncert_file = \"tls/c.pem\"\nkey_file = \"tls/k.pem\"\nca_file = \"tls/ca.pem\"",
		"bucket = \"b\"\nembedded {\n  listen = \"127.0.0.1:4333\"\n  store_dir = \"nats\"\n  server_name = \"n\"\n}",
	},
	"transform.extract": {
		"input = source.static.in\nkey = record.value.ip",
		"input = source.files.objs\nfor_each = try(object.status.podIPs, [])\nkey = each.value.ip",
	},
	"transform.filter":       {"input = source.static.in\nwhere = record.key != \"\""},
	"transform.debounce":     {"input = source.static.in\nmax_wait = \"1s\""},
	"transform.grace_period": {"input = source.static.in"},
	"transform.aggregate":    {"input = source.static.in\nlet = { ips = { for r in records : r.key => r.value.ip } }\nfor_each = let.ips\nkey = each.key\nvalue = { ip = each.value }"},
	"sink.ebpf_map": {
		"input = source.static.in\npin = \"/sys/fs/bpf/pipeline/t\"\nkey {\n  type = \"ip\"\n}\nvalue {\n  type = \"u32\"\n  from = 1\n  byte_order = \"host\"\n}",
		"input = source.static.in\npin = \"/sys/fs/bpf/pipeline/t\"\nkey {\n  type = \"ip\"\n}\nvalue {\n  type = \"struct\"\n  field \"a\" {\n    type = \"u32\"\n    from = record.value.n\n  }\n}",
		"input = source.static.in\npin = \"/sys/fs/bpf/pipeline/t\"\ntype = \"lru_hash\"\nmap_flags = [\"no_common_lru\"]\nkey {\n  type = \"ip\"\n}\nvalue {\n  type = \"u32\"\n  from = 1\n}",
		"input = source.static.in\npin = \"/sys/fs/bpf/pipeline/t\"\nkey {\n  type = \"u32\"\n  from = record.value.n\n  byte_order = \"be\"\n}\nvalue {\n  type = \"u64\"\n  from = record.value.n\n}",
		"input = source.static.in\npin = \"/sys/fs/bpf/pipeline/t\"\nkey {\n  type = \"struct\"\n  field \"a\" {\n    type = \"u32\"\n    from = record.value.n\n    byte_order = \"be\"\n  }\n}\nvalue {\n  type = \"u32\"\n  from = 1\n}",
		"input = source.static.in\npin = \"/sys/fs/bpf/pipeline/t\"\nkey {\n  type = \"struct\"\n  field \"a\" {\n    type = \"u64\"\n    from = record.value.n\n    byte_order = \"be\"\n  }\n}\nvalue {\n  type = \"u32\"\n  from = 1\n}",
	},
	"sink.log":   {"input = source.static.in"},
	"sink.audit": {"input = source.static.in\npath = \"audit.jsonl\"", "input = source.static.in\npath = \"audit.jsonl\"\nevents {\n  cluster = cluster.prod\n  namespace = \"shop\"\n  ops = [\"object_applied\"]\n}"},
	"sink.nats": {
		"input = source.static.in\nsubject = \"s.${record.key}\"\nurl = \"nats://127.0.0.1:4222\"",
		"input = source.static.in\nsubject = \"s.${record.key}\"\nurl = \"nats://127.0.0.1:4222\"\nuser = \"u\"\npassword = \"p\"",
		"input = source.static.in\nsubject = \"s.${record.key}\"\nurl = \"tls://127.0.0.1:4222\"\ncert_file = \"tls/c.pem\"\nkey_file = \"tls/k.pem\"\nca_file = \"tls/ca.pem\"",
		"input = source.static.in\nsubject = \"s.${record.key}\"\nembedded {\n  listen = \"127.0.0.1:4333\"\n  store_dir = \"nats\"\n  server_name = \"n\"\n}",
	},
	"sink.nats_kv": {
		"input = source.static.in\nbucket = \"b\"\nurl = \"nats://127.0.0.1:4222\"",
		"input = source.static.in\nbucket = \"b\"\nurl = \"nats://127.0.0.1:4222\"\nuser = \"u\"\npassword = \"p\"",
		"input = source.static.in\nbucket = \"b\"\nurl = \"tls://127.0.0.1:4222\"\ncert_file = \"tls/c.pem\"\nkey_file = \"tls/k.pem\"\nca_file = \"tls/ca.pem\"",
		"input = source.static.in\nbucket = \"b\"\nembedded {\n  listen = \"127.0.0.1:4333\"\n  store_dir = \"nats\"\n  server_name = \"n\"\n}",
	},
	"sink.template": {
		"input = source.static.in\npath = \"out.cfg\"\ntemplate = \"n=${length(records)}\"",
		"input = source.static.in\npath = \"out.cfg\"\ntemplate_file = \"t.tmpl\"",
		"input = source.static.in\npath = \"out.cfg\"\ntemplate = \"x\"\nmode = \"0600\"\nreload_signal = \"SIGHUP\"\npid_file = \"run/x.pid\"",
		"input = source.static.in\npath = \"out.cfg\"\ntemplate = \"x\"\nreload_signal = \"SIGUSR2\"\npid_file = \"run/x.pid\"\nruntime \"haproxy\" {\n  socket = \"run/admin.sock\"\n  timeout = \"2s\"\n}",
	},
	"sink.prometheus": {
		"input = source.static.in\nmetric = \"widget_ready\"\nhelp = \"h\"\nlabels = { name = record.key }\nvalue = 1",
		"input = source.static.in\nmetric = \"widget_restarts_total\"\ntype = \"counter\"\nhelp = \"h\"\nvalue = 1",
	},
	"sink.kubernetes": {
		"input = source.static.in\ncluster = cluster.prod\nobject = { apiVersion = \"v1\", kind = \"ConfigMap\", metadata = { name = record.key, namespace = \"shop\" }, data = { ip = record.value.ip } }",
		"input = source.static.in\nobject = { apiVersion = \"v1\", kind = \"ConfigMap\", metadata = { name = record.key, namespace = \"shop\" }, data = { key = record.key } }",
	},
}

// changedOnlyWith names the attributes no value of which compiles when
// changed alone, with the attribute that must change with them and why.
var changedOnlyWith = map[string]string{
	"sink.prometheus.type": "metric: a counter's name ends in _total and a gauge's does not",
}

// TestReloadEveryAttribute: for every attribute of every node type of the
// registry, and every attribute of their nested blocks, a changed value
// either rebuilds the node or is applied to it in place, and `plan
// --against` says which, naming the attribute. The attributes come from
// the specs, so a new one is covered as soon as it is declared; a changed
// value is generated from its type, example, default and enum values, and
// an attribute for which no changed value compiles fails the test.
func TestReloadEveryAttribute(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"t.tmpl", "objs/a.yaml", "data/a.csv", "tls/c.pem", "tls/k.pem", "tls/ca.pem", "haproxy.cfg.tmpl"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg := registry()
	for _, spec := range reg.All() {
		typ := string(spec.Kind) + "." + spec.Type
		t.Run(typ, func(t *testing.T) {
			bases := reloadBases[typ]
			if len(bases) == 0 {
				bases = []string{generatedBase(spec)}
			}
			if spec.Kind != node.KindSource {
				// The same bodies with two inputs, for inputs, on_conflict and merge.
				for _, b := range slices.Clone(bases) {
					if strings.Contains(b, "input = source.static.in") {
						bases = append(bases, strings.Replace(b, "input = source.static.in", "inputs = [source.static.in, source.static.other]", 1))
					}
				}
			}
			checkEveryAttribute(t, dir, reg, spec, bases)
		})
	}
}

// attrPath is an attribute in a node's body: the nested blocks leading to
// it, then its name.
type attrPath []string

func (p attrPath) String() string { return strings.Join(p, ".") }

// checkEveryAttribute changes, in each base, each attribute the base can
// hold to each candidate value that compiles, and checks the diff of each
// change (checkChange); then that every attribute had such a change and
// every nested block type appeared in a base.
func checkEveryAttribute(t *testing.T, dir string, reg *node.Registry, spec node.Spec, bases []string) {
	addr := string(spec.Kind) + "." + spec.Type + ".t"
	full := spec.FullBody()
	tried := map[string]int{} // changes that compiled, by attribute path
	blocksSeen := map[string]bool{}
	written := map[string][]string{} // values the bases write, by attribute path: candidates for the others
	for _, body := range bases {
		collectValues(parseNode(t, nodeBlock(spec, body)), nil, written)
	}
	for bi, body := range bases {
		base := nodeBlock(spec, body)
		old := compileNode(dir, reg, base)
		if old == nil {
			t.Fatalf("base %d does not compile:\n%s\n%s", bi, base, compileErrors(dir, reg, base))
		}
		if d := graph.DiffGraphs(old, compileNode(dir, reg, base)); d.Changed() {
			t.Fatalf("base %d changes against itself: %+v", bi, d.Nodes)
		}
		for _, p := range attrPaths(full, nil, parseNode(t, base), blocksSeen) {
			info := attrInfo(full, p)
			for _, cand := range append(candidates(info), written[p.String()]...) {
				src, ok := withAttr(t, base, p, info, cand)
				if !ok {
					continue
				}
				g := compileNode(dir, reg, src)
				if g == nil {
					continue
				}
				tried[p.String()]++
				checkChange(t, addr, p, old, g, src)
			}
		}
	}
	all := attrPaths(full, nil, nil, nil)
	t.Logf("%d attributes, %d changes", len(all), sumValues(tried))
	for _, p := range all {
		if tried[p.String()] == 0 && changedOnlyWith[string(spec.Kind)+"."+spec.Type+"."+p.String()] == "" {
			t.Errorf("%s: no changed value of %s compiles in any base; add a base to reloadBases", addr, p)
		}
	}
	for _, p := range blockPaths(full, nil) {
		if !blocksSeen[p.String()] {
			t.Errorf("%s: no base has a %s block; add one to reloadBases", addr, p)
		}
	}
}

// checkChange checks the diff of one change: the node is rebuilt naming
// the changed attribute (or its outermost block), or kept with the
// attribute applied in place; the text of `plan --against` says the same.
func checkChange(t *testing.T, addr string, p attrPath, old, g *graph.Graph, src string) {
	t.Helper()
	name := p[0]
	d := graph.DiffGraphs(old, g)
	var nd *graph.NodeDiff
	for i := range d.Nodes {
		if d.Nodes[i].Address == addr {
			nd = &d.Nodes[i]
		}
	}
	switch {
	case nd == nil:
		t.Fatalf("%s: not in the diff", addr)
	case nd.Action == graph.Rebuilt && slices.Contains(nd.Changed, name):
	case nd.Action == graph.Kept && slices.Contains(nd.InPlace, name):
	default:
		t.Errorf("%s: changing %s: %s, changed %v, in place %v; want rebuilt or applied in place, naming %s\n%s",
			addr, p, nd.Action, nd.Changed, nd.InPlace, name, src)
		return
	}
	// What plan --against prints, from the state a running instance serves.
	b, err := json.Marshal(old.State())
	if err != nil {
		t.Fatal(err)
	}
	var st graph.GraphState
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	rp := &planview.Reload{Against: "test", Running: st}
	rp.Diff = graph.DiffGraphs(st.Graph(), g)
	var text view.TermText
	planview.Text{}.WriteReload(&text, rp)
	want := fmt.Sprintf("~ %s  rebuilt (", addr)
	if nd.Action == graph.Kept {
		want = fmt.Sprintf("= %s  kept, applied in place (", addr)
	}
	line := ""
	for _, l := range strings.Split(text.String(), "\n") {
		if strings.Contains(l, " "+addr+" ") {
			line = l
		}
	}
	if !strings.Contains(line, want) || !strings.Contains(line, name) {
		t.Errorf("%s: changing %s: plan --against says %q, want %q naming %s\n%s", addr, p, line, want, name, text.String())
	}
	for _, n := range planview.ReloadJSON(rp).Nodes {
		if n.Address == addr && !slices.Contains(n.Changed, name) && !slices.Contains(n.InPlace, name) {
			t.Errorf("%s: changing %s: plan --against --json: changed %v, in place %v, want %s in one", addr, p, n.Changed, n.InPlace, name)
		}
	}
}

// nodeBlock is the block of the node under test with body.
func nodeBlock(spec node.Spec, body string) string {
	return fmt.Sprintf("%s %q \"t\" {\n%s\n}\n", spec.Kind, spec.Type, body)
}

// compileNode compiles the prelude and the node's block; nil when the
// configuration has errors.
func compileNode(dir string, reg *node.Registry, block string) *graph.Graph {
	l := loadNode(dir, reg, block)
	if l.diags.HasErrors() || l.graph == nil {
		return nil
	}
	return l.graph
}

func compileErrors(dir string, reg *node.Registry, block string) string {
	return loadNode(dir, reg, block).diags.Error()
}

func loadNode(dir string, reg *node.Registry, block string) *loaded {
	path := filepath.Join(dir, "p.hcl")
	if err := os.WriteFile(path, []byte(reloadPrelude+"\n"+block), 0o644); err != nil {
		return &loaded{diags: hcl.Diagnostics{{Severity: hcl.DiagError, Summary: err.Error()}}}
	}
	return loadWith([]string{path}, schema.Options{Environ: []string{}}, reg)
}

// generatedBase is a body of the required attributes, with their examples.
func generatedBase(spec node.Spec) string {
	var b strings.Builder
	if spec.Kind != node.KindSource {
		b.WriteString("input = source.static.in\n")
	}
	for _, a := range spec.Body.Attrs {
		if info := a.Info(); info.Required {
			fmt.Fprintf(&b, "%s = %s\n", info.Name, info.Example)
		}
	}
	return b.String()
}

// parseNode returns the body of the node block, for editing.
func parseNode(t *testing.T, block string) *hclwrite.Body {
	t.Helper()
	f, diags := hclwrite.ParseConfig([]byte(block), "p.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("parse %s: %s", block, diags.Error())
	}
	return f.Body().Blocks()[0].Body()
}

// attrPaths lists the attributes of schema b: every attribute of its own,
// and those of the nested blocks body holds (of every nested block when
// body is nil). It notes in seen the paths of the blocks body holds.
func attrPaths(b schema.Block, prefix attrPath, body *hclwrite.Body, seen map[string]bool) []attrPath {
	var out []attrPath
	for _, a := range b.Attrs {
		out = append(out, append(slices.Clone(prefix), a.Info().Name))
	}
	for _, bt := range b.Blocks {
		p := append(slices.Clone(prefix), bt.Name)
		if body == nil {
			out = append(out, attrPaths(bt.Body, p, nil, nil)...)
			continue
		}
		if nested := firstBlock(body, bt.Name); nested != nil {
			seen[p.String()] = true
			out = append(out, attrPaths(bt.Body, p, nested, seen)...)
		}
	}
	return out
}

// collectValues adds to out the text of every attribute of body and of
// its nested blocks, by path.
func collectValues(body *hclwrite.Body, prefix attrPath, out map[string][]string) {
	for name, a := range body.Attributes() {
		p := append(slices.Clone(prefix), name).String()
		out[p] = append(out[p], strings.TrimSpace(string(a.Expr().BuildTokens(nil).Bytes())))
	}
	for _, blk := range body.Blocks() {
		collectValues(blk.Body(), append(slices.Clone(prefix), blk.Type()), out)
	}
}

// blockPaths lists the nested block types of b, at every depth.
func blockPaths(b schema.Block, prefix attrPath) []attrPath {
	var out []attrPath
	for _, bt := range b.Blocks {
		p := append(slices.Clone(prefix), bt.Name)
		out = append(out, p)
		out = append(out, blockPaths(bt.Body, p)...)
	}
	return out
}

func firstBlock(body *hclwrite.Body, typ string) *hclwrite.Body {
	for _, blk := range body.Blocks() {
		if blk.Type() == typ {
			return blk.Body()
		}
	}
	return nil
}

// attrInfo returns the declaration of the attribute at p.
func attrInfo(b schema.Block, p attrPath) *schema.AttrInfo {
	for _, name := range p[:len(p)-1] {
		for _, bt := range b.Blocks {
			if bt.Name == name {
				b = bt.Body
			}
		}
	}
	return b.Attr(p[len(p)-1]).Info()
}

// withAttr returns block with the attribute at p set to the HCL text
// value; false when that is no change: the value it has, or the default
// of an attribute not set.
func withAttr(t *testing.T, block string, p attrPath, info *schema.AttrInfo, value string) (string, bool) {
	t.Helper()
	f, diags := hclwrite.ParseConfig([]byte(block), "p.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("parse %s: %s", block, diags.Error())
	}
	body := f.Body().Blocks()[0].Body()
	for _, name := range p[:len(p)-1] {
		body = firstBlock(body, name)
	}
	name := p[len(p)-1]
	vf, diags := hclwrite.ParseConfig([]byte("v = "+value+"\n"), "v.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		return "", false // an example that is no HCL expression
	}
	toks := vf.Body().GetAttribute("v").Expr().BuildTokens(nil)
	cur := info.Default
	if a := body.GetAttribute(name); a != nil {
		cur = string(a.Expr().BuildTokens(nil).Bytes())
	}
	if squash(cur) == squash(value) {
		return "", false
	}
	body.SetAttributeRaw(name, toks)
	return string(f.Bytes()), true
}

func sumValues(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func squash(s string) string { return strings.Join(strings.Fields(s), "") }

// candidates are changed values to try for an attribute: its example, its
// default, its enum values and values made for its type.
func candidates(info *schema.AttrInfo) []string {
	var out []string
	add := func(vs ...string) {
		for _, v := range vs {
			if v != "" && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	add(info.Example)
	for _, e := range info.Enum {
		add(fmt.Sprintf("%q", e))
	}
	switch info.Type {
	case "bool":
		add("true", "false")
	case "number":
		add("3", "7")
	case "duration":
		add(`"7s"`, `"3m"`)
	case "size":
		add(`"3MiB"`, `"7KiB"`)
	case "list(string)":
		add(`["changed"]`, `["{.metadata.uid}"]`)
	case "string or list(string)":
		add(`"nats://10.0.0.9:4222"`, `["nats://10.0.0.9:4222", "nats://10.0.0.8:4222"]`)
	case "reference":
		for _, k := range info.RefKinds {
			switch k {
			case "cluster":
				add("cluster.prod", "cluster.other")
			case "source":
				add("source.static.other", "source.static.in")
			}
		}
	case "list(reference)":
		add("[source.static.other, source.static.in]", "[source.static.in, source.static.other, source.files.objs]")
	case "expression":
		add(`"changed"`, "record.key", "record.value", "true", "false", `"s.${record.value.ip}"`, "values[0]")
	case "any":
		add(`{ changed = { ip = "10.9.9.9" } }`)
	default: // string and enumerations
		add(`"changed"`, `"v2"`, `"changed/v2"`)
	}
	add(info.Default) // for an attribute set to something else
	return out
}
