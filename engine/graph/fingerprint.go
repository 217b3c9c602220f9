package graph

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// A node's fingerprint digests its effective definition: its kind and type,
// every attribute of its body after compile-time evaluation (variables,
// locals, functions, the cluster blocks it refers to, defaults filled in),
// what the graph reads of its objects (a source's projection) and its
// inputs' fingerprints. Two nodes with equal fingerprints would run the same
// way on the same upstream data, so a reload keeps such a node running.
//
// Fingerprints are made of SHA-256 digests only. A sensitive value (an
// attribute declared Sensitive, a sensitive variable, a cluster token)
// enters them through an HMAC keyed with a secret drawn when the process
// starts, so no fingerprint can be used to guess a secret. Fingerprints of
// sensitive nodes therefore compare only between processes that share the
// key: `pipeline run` writes its key to a file only its user can read, and
// `pipeline plan --against` on the same machine uses it (UseFingerprintKey).

// inPlaceAttrs are common attributes the engine reads when it removes a
// node, not while it runs: a reload hands a new value to the running
// node (engine/reload_apply.go), which keeps running. Each has a part, so
// a diff names its change (NodeDiff.InPlace), but no share in the fingerprint.
var inPlaceAttrs = map[string]bool{node.OnRemoveAttr.Info().Name: true}

var fingerprintKey = func() []byte {
	k := make([]byte, FingerprintKeySize)
	if _, err := rand.Read(k); err != nil {
		panic(fmt.Sprintf("engine: no randomness for fingerprint keys: %v", err)) // the platform is broken
	}
	return k
}()

// FingerprintKeySize is the size of a fingerprint key.
const FingerprintKeySize = 32

// FingerprintKey returns the key this process digests sensitive parts of
// fingerprints with.
func FingerprintKey() []byte { return append([]byte(nil), fingerprintKey...) }

// UseFingerprintKey makes this process digest sensitive parts with k, the
// key of a running instance, so that the fingerprints of the nodes holding
// a secret compare with that instance's. Call it before compiling a graph;
// graphs compiled before keep their fingerprints.
func UseFingerprintKey(k []byte) error {
	if len(k) != FingerprintKeySize {
		return fmt.Errorf("fingerprint key of %d bytes, want %d", len(k), FingerprintKeySize)
	}
	fingerprintKey = append([]byte(nil), k...)
	return nil
}

func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func secretDigest(s string) string {
	m := hmac.New(sha256.New, fingerprintKey)
	m.Write([]byte(s))
	return "hmac:" + hex.EncodeToString(m.Sum(nil))
}

// Fingerprints sets the fingerprint of every built node, once. Compile
// leaves them out (validate, graph and the language server never use
// them); DiffGraphs and engine.NewRuntime call it.
func (g *Graph) Fingerprints() {
	if g == nil {
		return
	}
	g.fpOnce.Do(func() {
		for _, n := range g.Nodes {
			if c, ok := g.contents[n]; ok && n.Impl() != nil {
				g.fingerprint(n, c)
			}
		}
		g.contents = nil
	})
}

// fingerprint sets n.Fingerprint and n.Parts. content is n's decoded body;
// n's input must already be fingerprinted (nodes go in topological order).
func (g *Graph) fingerprint(n *Node, content *schema.Content) {
	fp := &printer{cfg: g.Config}
	parts := map[string]string{"type": digest(string(n.Kind), n.Type)}
	body := n.Spec.FullBody()
	for _, a := range body.Attrs {
		info := a.Info()
		if info.Name == node.InputAttr.Info().Name {
			continue
		}
		parts[info.Name] = fp.attr(info, content)
	}
	for _, bt := range body.Blocks {
		d := fp.blocks(bt, content)
		if a, ok := parts[bt.Name]; ok {
			// An attribute and a block of one name are two spellings of
			// one setting (selector = "..." or selector { ... }): both
			// count, under the name the user wrote.
			d = digest("attr", a, "blocks", d)
		}
		parts[bt.Name] = d
	}
	if len(n.Inputs) > 0 {
		// Every input counts: a union whose second input is rebuilt is
		// rebuilt too, with its consumer.
		ins := make([]string, 0, 2*len(n.Inputs))
		for _, in := range n.Inputs {
			ins = append(ins, in.Address, in.Fingerprint)
		}
		parts["input"] = digest(ins...)
	}
	if n.Projection != nil {
		parts["projection"] = digest(n.Projection.String())
	}
	all := make([]string, 0, 2*len(parts))
	for _, k := range slices.Sorted(maps.Keys(parts)) {
		if !inPlaceAttrs[k] {
			all = append(all, k, parts[k])
		}
	}
	n.Parts, n.Fingerprint = parts, digest(all...)
}

// printer turns attribute values into canonical text, then digests it.
type printer struct {
	cfg *schema.Config
}

// attr digests one attribute: its value when it evaluates at compile time,
// else its tokens plus the values of the compile-time names it uses.
func (p *printer) attr(info *schema.AttrInfo, c *schema.Content) string {
	if c == nil {
		return digest("absent")
	}
	a, ok := c.Attrs[info.Name]
	if !ok {
		return p.defaultDigest(info)
	}
	text, refs, sens := p.expr(a.Expr, c.Ctx)
	if info.Sensitive || sens {
		text = secretDigest(text)
	}
	return digest(append([]string{"set", text}, refs...)...)
}

// defaultDigest is the digest of an absent attribute: that of its default
// value written out when the default's HCL text evaluates, so that
// `prune = true` and no prune at all are the same definition.
func (p *printer) defaultDigest(info *schema.AttrInfo) string {
	if info.Default == "" {
		return digest("absent")
	}
	expr, diags := hclsyntax.ParseExpression([]byte(info.Default), "default", hcl.InitialPos)
	if diags.HasErrors() {
		return digest("default", info.Default)
	}
	v, diags := expr.Value(nil)
	if diags.HasErrors() || !v.IsWhollyKnown() {
		return digest("default", info.Default)
	}
	text := "value:" + valueText(v)
	if info.Sensitive {
		text = secretDigest(text)
	}
	return digest("set", text)
}

func (p *printer) blocks(bt *schema.BlockType, c *schema.Content) string {
	if c == nil {
		return digest("absent")
	}
	var out []string
	for _, sub := range c.Blocks[bt.Name] {
		out = append(out, "block", strings.Join(sub.Labels, "\x00"))
		for _, a := range bt.Body.Attrs {
			out = append(out, a.Info().Name, p.attr(a.Info(), sub))
		}
		for _, nested := range bt.Body.Blocks {
			out = append(out, nested.Name, p.blocks(nested, sub))
		}
	}
	return digest(out...)
}

// expr returns the canonical text of an expression, the digests of the
// compile-time values it refers to, and whether any of them is sensitive.
func (p *printer) expr(e hcl.Expression, ctx *hcl.EvalContext) (string, []string, bool) {
	vars := e.Variables()
	// An expression that loops (a template over a local) is printed as
	// written with the values it reads, not run: its value may take
	// minutes to compute.
	evaluable := ctx != nil && !loops(e) && !slices.ContainsFunc(vars, func(tr hcl.Traversal) bool { return ctx.Variables[tr.RootName()] == cty.NilVal })
	if evaluable {
		if v, diags := e.Value(ctx); !diags.HasErrors() && v.IsWhollyKnown() {
			// A sensitive variable's value is marked, and so is what a
			// local computes from it.
			return "value:" + valueText(v), nil, schema.IsSensitive(v)
		}
	}
	sensitive := false
	var refs []string
	for _, tr := range vars {
		root := tr.RootName()
		switch {
		case root == "cluster" && len(tr) >= 2:
			if a, ok := tr[1].(hcl.TraverseAttr); ok && p.cfg != nil {
				refs = append(refs, clusterDigest(p.cfg.Clusters[a.Name]))
			}
		case ctx != nil && ctx.Variables[root] != cty.NilVal:
			v, diags := tr.TraverseAbs(ctx)
			text := "unknown"
			if !diags.HasErrors() {
				text = valueText(v)
				sensitive = sensitive || schema.IsSensitive(v)
			}
			refs = append(refs, digest(tokensText(tr.SourceRange(), p.cfg), text))
		}
	}
	if sensitive {
		for i, r := range refs {
			refs[i] = secretDigest(r)
		}
	}
	return "expr:" + tokensText(e.Range(), p.cfg), refs, sensitive
}

// clusterDigest digests everything a client built from the cluster block
// depends on; the token only through the keyed digest.
func clusterDigest(c *schema.Cluster) string {
	if c == nil {
		return digest("no cluster")
	}
	ca, err := c.CACertPEM() // a rotated CA file rebuilds the nodes using it
	if err != nil {
		ca = []byte(err.Error())
	}
	return digest("cluster", c.Name, c.Kubeconfig, c.Context, fmt.Sprint(c.InCluster), c.Endpoint,
		string(ca), c.CACertFile, c.TokenFile, secretDigest(c.Token), fmt.Sprint(c.QPS), fmt.Sprint(c.Burst))
}

// valueText is a value's canonical JSON with its type, marks removed.
func valueText(v cty.Value) string {
	v, _ = v.UnmarkDeep()
	if v.IsNull() {
		return "null"
	}
	ty, err := ctyjson.MarshalType(v.Type())
	if err != nil {
		return v.GoString()
	}
	var b bytes.Buffer
	b.Write(ty)
	b.WriteByte('=')
	if appendJSON(&b, v, v.Type()) == nil {
		return b.String()
	}
	js, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return v.GoString()
	}
	return string(ty) + "=" + string(js)
}

// tokensText is the tokens of the text at rng without comments and line
// layout, so reformatting a file keeps its nodes.
func tokensText(rng hcl.Range, cfg *schema.Config) string {
	src := SourceBytes(rng, cfg)
	if src == nil {
		return rng.String()
	}
	toks, diags := hclsyntax.LexExpression(src, rng.Filename, rng.Start)
	if diags.HasErrors() {
		return string(src)
	}
	var b strings.Builder
	for _, t := range toks {
		switch t.Type {
		case hclsyntax.TokenComment, hclsyntax.TokenNewline, hclsyntax.TokenEOF:
			continue
		}
		b.Write(t.Bytes)
		b.WriteByte(' ')
	}
	return b.String()
}

// SourceBytes is the text of rng in cfg's files; nil when it has none.
func SourceBytes(rng hcl.Range, cfg *schema.Config) []byte {
	if cfg == nil {
		return nil
	}
	f := cfg.Files[rng.Filename]
	if f == nil || rng.Start.Byte < 0 || rng.End.Byte > len(f.Bytes) || rng.Start.Byte > rng.End.Byte {
		return nil
	}
	return f.Bytes[rng.Start.Byte:rng.End.Byte]
}

// loops reports whether e holds a for expression or a splat.
func loops(e hcl.Expression) bool {
	syn, ok := e.(hclsyntax.Node)
	if !ok {
		return false
	}
	found := false
	_ = hclsyntax.VisitAll(syn, func(n hclsyntax.Node) hcl.Diagnostics {
		switch n.(type) {
		case *hclsyntax.ForExpr, *hclsyntax.SplatExpr:
			found = true
		}
		return nil
	})
	return found
}
