package graph

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// Compile builds the typed graph of a loaded configuration. It reports every
// problem it finds at once: unknown types, bad references (with "did you
// mean"), cycles, type mismatches between nodes, each node's own decoding
// errors, and unused sources and transforms (warnings). The returned graph
// is usable only when the diagnostics hold no error.
func Compile(cfg *schema.Config, reg *node.Registry) (*Graph, hcl.Diagnostics) {
	defer cfg.Seal() // from here on, expressions run per record: no total budget
	g := &Graph{Config: cfg, byAddr: map[string]*Node{}}
	var diags hcl.Diagnostics
	contents := map[*Node]*schema.Content{}
	undecoded := map[*Node]bool{} // the body did not decode cleanly
	inputs := map[*Node][]hcl.Traversal{}
	var all []*Node
	unknown := map[string]bool{}               // addresses of blocks of an unknown type
	bodies := map[string]*typeBody{}           // by KIND.TYPE
	fulls := make([]*typeBody, len(cfg.Nodes)) // nil: a block of an unknown type
	for i, b := range cfg.Nodes {
		if spec, ok := reg.Lookup(b.Kind, b.Type); ok {
			key := string(b.Kind) + "." + b.Type
			if bodies[key] == nil {
				bodies[key] = &typeBody{spec: spec, Block: spec.FullBody()}
				bodies[key].sensitive = bodies[key].HasSensitive()
			}
			fulls[i] = bodies[key]
		}
	}
	// The bodies decode on every core; the loop below reads them in order.
	decoded, decodeDiags := make([]*schema.Content, len(cfg.Nodes)), make([]hcl.Diagnostics, len(cfg.Nodes))
	onEveryCore(len(cfg.Nodes), func(i int) {
		if b := cfg.Nodes[i]; fulls[i] != nil {
			decoded[i], decodeDiags[i] = schema.Decode(b.Body, fulls[i].Block, cfg.Ctx, b.DeclRange)
		}
	})
	for i, b := range cfg.Nodes {
		full, content, d := fulls[i], decoded[i], decodeDiags[i]
		if full == nil {
			diags = append(diags, unknownType(reg, b))
			unknown[b.Address()] = true
			continue
		}
		n := &Node{Address: b.Address(), Kind: b.Kind, Type: b.Type, Name: b.Name, Spec: full.spec, Block: b}
		diags = append(diags, d...)
		// Views mask sensitive attributes' values (tokens) like sensitive
		// variables. Without either, no value is sensitive.
		if full.sensitive || cfg.MayHoldSensitive() {
			cfg.Sensitive = append(cfg.Sensitive, full.SensitiveValues(content)...)
		}
		contents[n], undecoded[n] = content, d.HasErrors()
		if b.Kind != node.KindSource {
			trs, d := readInputs(n, content)
			diags = append(diags, d...)
			inputs[n] = trs
		}
		if b.Kind == node.KindSink {
			var d1, d2, d3 hcl.Diagnostics
			var rrng hcl.Range
			n.Prune, _, d1 = node.PruneAttr.Get(content)
			n.Resync, rrng, d2 = node.ResyncAttr.Get(content)
			n.OnRemove, _, d3 = node.OnRemoveAttr.Get(content)
			diags = append(append(append(diags, d1...), d2...), d3...)
			var d4 hcl.Diagnostics
			n.MaxDeletes, d4 = node.ReadMaxDeletes(content)
			diags = append(diags, d4...)
			if !d2.HasErrors() && n.Resync > 0 && n.Resync < MinResync {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Resync too frequent",
					Detail:  fmt.Sprintf("resync must be \"0s\" (off) or at least %s: each resync reads and compares the whole target.", MinResync),
					Subject: rrng.Ptr()})
			}
		}
		g.byAddr[n.Address] = n
		all = append(all, n)
	}
	badRef := false
	for _, n := range all {
		for i, tr := range inputs[n] {
			// A reference to a block of an unknown type restates that error.
			if tr == nil || unknown[strings.Join(traversalNames(tr), ".")] {
				badRef = true
				continue
			}
			up, d := g.resolveInput(n, tr)
			diags = append(diags, d...)
			if up == nil {
				badRef = true
				continue
			}
			n.Inputs = append(n.Inputs, up)
			n.inputRanges = append(n.inputRanges, n.elemRange(i))
		}
	}
	order, d := topoSort(all)
	diags = append(diags, d...)
	g.Nodes = order
	diags = append(diags, g.buildAll(contents, undecoded)...)
	if !badRef && !brokenInputs(cfg, all) {
		diags = append(diags, unused(order)...)
	}
	diags = append(diags, checkClaims(order)...)
	diags = append(diags, checkKnownConflicts(order)...)
	if !diags.HasErrors() {
		diags = append(diags, g.project()...)
	}
	g.contents = contents // fingerprinted when a run or a diff needs it
	return g, schema.DropDerived(diags)
}

// typeBody is a node type's spec and full body (node.Spec.FullBody), built
// once per compile, and whether it declares a Sensitive attribute.
type typeBody struct {
	spec node.Spec
	schema.Block
	sensitive bool
}

// MinResync is the shortest periodic full reconcile: a shorter one only
// burns CPU re-reading the target.
const MinResync = time.Second

func unknownType(reg *node.Registry, b *schema.NodeBlock) *hcl.Diagnostic {
	types := reg.Types(b.Kind)
	detail := fmt.Sprintf("There is no %s type %q. The %s types are: %s.", b.Kind, b.Type, b.Kind, strings.Join(types, ", "))
	if len(types) == 0 {
		detail = fmt.Sprintf("There is no %s type %q; this build registers no %s types.", b.Kind, b.Type, b.Kind)
	}
	if s := schema.DidYouMean(b.Type, types); s != "" {
		detail += fmt.Sprintf(" Did you mean %q?", s)
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown " + string(b.Kind) + " type", Detail: detail, Subject: b.TypeRange.Ptr()}
}

// resolveInput links n to the node one of its input references refers to.
func (g *Graph) resolveInput(n *Node, tr hcl.Traversal) (*Node, hcl.Diagnostics) {
	rng := tr.SourceRange()
	parts := traversalNames(tr)
	if len(parts) != 3 || (parts[0] != string(node.KindSource) && parts[0] != string(node.KindTransform)) {
		detail := "The input must refer to a source or transform as KIND.TYPE.NAME, such as source.kubernetes.pods."
		if len(parts) > 0 && parts[0] == string(node.KindSink) {
			detail = "A sink emits nothing, so it cannot be an input. Refer to a source or a transform."
		} else if len(parts) == 3 {
			if s := schema.DidYouMean(parts[0], []string{string(node.KindSource), string(node.KindTransform)}); s != "" {
				detail += fmt.Sprintf(" Did you mean %s?", strings.Join(append([]string{s}, parts[1:]...), "."))
			}
		}
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid input reference", Detail: detail, Subject: rng.Ptr()}}
	}
	addr := strings.Join(parts, ".")
	up, ok := g.byAddr[addr]
	if !ok {
		candidates := make([]string, 0, len(g.byAddr))
		for a, c := range g.byAddr {
			if c.Kind != node.KindSink {
				candidates = append(candidates, a)
			}
		}
		sort.Strings(candidates)
		detail := fmt.Sprintf("No %s %q is declared.", parts[0], parts[1]+"."+parts[2])
		if s := suggestNode(addr, parts, candidates); s != "" {
			detail += fmt.Sprintf(" Did you mean %s?", s)
		}
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Reference to undeclared node", Detail: detail, Subject: rng.Ptr()}}
	}
	if slices.Contains(n.Inputs, up) {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Duplicate input",
			Detail: fmt.Sprintf("%s is listed twice in inputs; list each input once.", addr), Subject: rng.Ptr()}}
	}
	up.Consumers = append(up.Consumers, n)
	return up, nil
}

// suggestNode finds the declared node closest to addr: the same TYPE.NAME
// under the other kind, or a close spelling.
func suggestNode(addr string, parts, candidates []string) string {
	for _, c := range candidates {
		if strings.HasSuffix(c, "."+parts[1]+"."+parts[2]) {
			return c
		}
	}
	return schema.DidYouMean(addr, candidates)
}

func traversalNames(tr hcl.Traversal) []string {
	var out []string
	for _, step := range tr {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			out = append(out, s.Name)
		case hcl.TraverseAttr:
			out = append(out, s.Name)
		default:
			return nil
		}
	}
	return out
}

// topoSort orders nodes so that each comes after its input, and reports
// every cycle once.
func topoSort(nodes []*Node) ([]*Node, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	state := map[*Node]int{}
	var order []*Node
	var visit func(n *Node, path []*Node)
	visit = func(n *Node, path []*Node) {
		switch state[n] {
		case 2:
			return
		case 1:
			// path runs from consumer to input; print it the way data flows.
			names, start := []string{n.Address}, slices.Index(path, n)
			for i := len(path) - 1; i >= start; i-- {
				names = append(names, path[i].Address)
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cycle in the graph",
				Detail: fmt.Sprintf("These nodes feed each other in a loop: %s (each arrow goes from an input to its consumer). Data must flow from sources to sinks.",
					strings.Join(names, " -> ")),
				Subject: n.InputRange.Ptr()})
			return
		}
		state[n] = 1
		for _, in := range n.Inputs {
			visit(in, append(path, n))
		}
		state[n] = 2
		order = append(order, n)
	}
	for _, n := range nodes {
		visit(n, nil)
	}
	// A node in a cycle is kept (so later checks see it) but its input is cut.
	if diags.HasErrors() {
		pos := make(map[*Node]int, len(order))
		for i, n := range order {
			pos[n] = i
		}
		for _, n := range order {
			kept, ranges := n.Inputs[:0], n.inputRanges[:0]
			for i, in := range n.Inputs {
				if pos[in] <= pos[n] { // a self-loop is kept
					kept, ranges = append(kept, in), append(ranges, n.inputRanges[i])
				}
			}
			n.Inputs, n.inputRanges = kept, ranges
		}
	}
	return order, diags
}

// buildAll builds g.Nodes on every core, in waves: first the nodes
// without inputs, then those whose inputs are all built, and so on (the
// order is topological). Their diagnostics keep that order.
func (g *Graph) buildAll(contents map[*Node]*schema.Content, undecoded map[*Node]bool) hcl.Diagnostics {
	depth := make(map[*Node]int, len(g.Nodes))
	var waves [][]int // indexes in g.Nodes, by depth
	for i, n := range g.Nodes {
		for _, in := range n.Inputs {
			depth[n] = max(depth[n], depth[in]+1)
		}
		for depth[n] >= len(waves) {
			waves = append(waves, nil)
		}
		waves[depth[n]] = append(waves[depth[n]], i)
	}
	diags := make([]hcl.Diagnostics, len(g.Nodes))
	for _, wave := range waves {
		onEveryCore(len(wave), func(j int) {
			n := g.Nodes[wave[j]]
			diags[wave[j]] = g.build(n, contents[n], undecoded[n])
		})
	}
	return slices.Concat(diags...)
}

// onEveryCore calls f(0) to f(n-1) on every core, starting them in that
// order. A panic in f (a bug) is raised again once the calls are done.
func onEveryCore(n int, f func(i int)) {
	var next atomic.Int64
	var panicked atomic.Value
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				func() {
					defer func() {
						if p := recover(); p != nil {
							panicked.CompareAndSwap(nil, fmt.Sprintf("%v\n%s", p, debug.Stack()))
						}
					}()
					f(i)
				}()
			}
		})
	}
	wg.Wait()
	if p := panicked.Load(); p != nil {
		panic(p)
	}
}

// build type-checks n against its input and calls its constructor. A body
// that did not decode cleanly (a missing block or attribute, an unknown one)
// is only checked attribute by attribute: constructors, like their tests
// through nodetest.Build, only ever see cleanly decoded bodies.
func (g *Graph) build(n *Node, content *schema.Content, undecoded bool) hcl.Diagnostics {
	var diags hcl.Diagnostics
	var up *node.Upstream
	mismatch := false
	if n.Kind != node.KindSource {
		// Without a usable input the constructor cannot run, but the body's
		// own attributes are still checked so one run shows every problem.
		var ok bool
		up, ok = upstream(n)
		if !ok {
			// The input's problem is already reported: a bad reference, a
			// cycle, or an upstream node that failed to build.
			return n.Spec.Body.Check(content)
		}
		if d := mixedInputs(n); d != nil {
			return append(hcl.Diagnostics{d}, n.Spec.Body.Check(content)...)
		}
		if mismatch = len(n.Spec.Accepts) > 0 && !slices.Contains(n.Spec.Accepts, up.Type); mismatch {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Type mismatch between nodes",
				Detail: fmt.Sprintf("%s accepts %s, but its input %s emits %s. %s", n.Address, joinTypes(n.Spec.Accepts),
					up.Address, up.Type, mismatchHint(n.Spec.Accepts, up.Type)),
				Subject: n.InputRange.Ptr()})
		}
	}
	if undecoded {
		return append(diags, n.Spec.Body.Check(content)...)
	}
	built, d := n.Spec.Build(node.Build{Address: n.Address, Name: n.Name, Content: content, Input: up, Config: g.Config})
	if mismatch {
		// The node's own errors too, so one run shows all of them; the
		// node is not used.
		for _, e := range d {
			if e.Severity == hcl.DiagError {
				diags = append(diags, e)
			}
		}
		return diags
	}
	diags = append(diags, d...)
	if d.HasErrors() || built.Impl() == nil {
		return diags
	}
	n.Built = built
	switch {
	case n.Kind == node.KindSink:
	case n.Spec.Output == node.SameAsInput:
		n.Emits = up.Type
	default:
		n.Emits = n.Spec.Output
	}
	if e, ok := built.Impl().(node.Emitter); ok && n.Kind != node.KindSink {
		n.Emits = e.Emits()
	}
	return diags
}

func joinTypes(ts []node.DataType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, " or ")
}

func mismatchHint(want []node.DataType, got node.DataType) string {
	if got == node.Objects && slices.Contains(want, node.Records) {
		return "Put a transform \"extract\" between them to turn objects into records."
	}
	return "Connect it to a node that emits what it accepts."
}

// brokenInputs reports whether some input is unknown: a node of an unknown
// type, or a transform or sink whose input did not resolve. Its upstream
// then looks unused only because of that error, so unused warnings wait
// until the references are fixed.
func brokenInputs(cfg *schema.Config, built []*Node) bool {
	return len(built) < len(cfg.Nodes) || slices.ContainsFunc(built, func(n *Node) bool {
		return n.Kind != node.KindSource && len(n.Inputs) == 0
	})
}

// unused warns about sources and transforms nothing consumes.
func unused(nodes []*Node) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, n := range nodes {
		if n.Kind != node.KindSink && len(n.Consumers) == 0 {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Unused " + string(n.Kind),
				Detail:  fmt.Sprintf("Nothing consumes %s, so it does no useful work. Refer to it from a transform or sink input, or remove it.", n.Address),
				Subject: n.Block.NameRange.Ptr()})
		}
	}
	return diags
}
