package schema

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// TestAttrRead: Read gathers diagnostics in one list and returns what Get
// returns; Range is Get's range, present or absent.
func TestAttrRead(t *testing.T) {
	f, diags := hclsyntax.ParseConfig([]byte("n = 3\ns = 4\nbad = \"x\"\n"), "t.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	n, s, bad, absent := Int("n"), String("s"), Int("bad"), String("absent").Default("d", `"d"`)
	c, diags := Decode(f.Body, Block{Attrs: []Attribute{n, s, bad, absent}}, nil, hcl.Range{Filename: "t.hcl"})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var got hcl.Diagnostics
	if v := n.Read(c, &got); v != 3 {
		t.Errorf("Read(n) = %v", v)
	}
	if v := s.Read(c, &got); v != "4" {
		t.Errorf("Read(s) = %q", v)
	}
	if v := absent.Read(c, &got); v != "d" {
		t.Errorf("Read(absent) = %q, want the default", v)
	}
	bad.Read(c, &got)
	_, _, want := bad.Get(c)
	if len(got) != 1 || len(want) != 1 || got[0].Summary != want[0].Summary {
		t.Errorf("Read gathered %v, Get returns %v", got, want)
	}
	if _, rng, _ := s.Get(c); s.Range(c) != rng || rng.Start.Line != 2 {
		t.Errorf("Range(s) = %v, Get's range %v", s.Range(c), rng)
	}
	if _, rng, _ := absent.Get(c); absent.Range(c) != rng || rng != c.Range {
		t.Errorf("Range(absent) = %v, Get's range %v, block %v", absent.Range(c), rng, c.Range)
	}
}

// TestLiteral: a Literal handle hands its reader the expression as
// written, evaluated in no context, and shows its declared type.
func TestLiteral(t *testing.T) {
	f, diags := hclsyntax.ParseConfig([]byte("at = \"5s\"\nref = var.x\n"), "t.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	read := func(expr hcl.Expression) (string, hcl.Diagnostics) {
		v, diags := expr.Value(nil)
		if diags.HasErrors() {
			return "", diags
		}
		return v.AsString(), nil
	}
	at, ref := Literal("at", "duration", read), Literal("ref", "duration", read)
	if at.Info().Type != "duration" {
		t.Errorf("type %q", at.Info().Type)
	}
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{"x": cty.StringVal("1s")})}}
	c, diags := Decode(f.Body, Block{Attrs: []Attribute{at, ref}}, ctx, hcl.Range{Filename: "t.hcl"})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if v, rng, diags := at.Get(c); v != "5s" || diags.HasErrors() || rng.Start.Line != 1 {
		t.Errorf("Get(at) = %q at %v: %v", v, rng, diags)
	}
	if _, _, diags := ref.Get(c); !diags.HasErrors() {
		t.Error("a literal read a variable of the configuration's context")
	}
}
