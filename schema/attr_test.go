package schema

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
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
