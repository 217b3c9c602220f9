package schema

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// TestParsesLoad: a load with Parses takes the parse of a file whose
// content did not change from an earlier load, parses a changed file
// again, keeps no parse with diagnostics, and says what a load without
// Parses says.
func TestParsesLoad(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.hcl"), filepath.Join(dir, "b.hcl")
	for name, src := range map[string]string{a: "variable \"x\" {\n  default = 1\n}\n", b: "locals {\n  y = var.x + 1\n}\n"} {
		if err := os.WriteFile(name, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	parses := NewParses(1 << 20)
	load := func(overlay map[string][]byte) map[string]*hcl.File {
		t.Helper()
		l := NewLoader()
		_, got := l.Load([]string{dir}, Options{Overlay: overlay, Parses: parses})
		_, want := NewLoader().Load([]string{dir}, Options{Overlay: overlay})
		if got.Error() != want.Error() {
			t.Errorf("with Parses:\n%s\nwithout:\n%s", got.Error(), want.Error())
		}
		return l.Files()
	}
	first := load(nil)
	again := load(nil)
	if again[a] != first[a] || again[b] != first[b] {
		t.Error("files that did not change were parsed again")
	}

	edited := load(map[string][]byte{b: []byte("locals {\n  y = var.z\n}\n")})
	if edited[a] != first[a] {
		t.Error("a.hcl did not change but was parsed again")
	}
	if edited[b] == first[b] || string(edited[b].Bytes) != "locals {\n  y = var.z\n}\n" {
		t.Error("b.hcl changed but its old parse was taken")
	}

	broken := map[string][]byte{b: []byte("locals {\n  y = \n}\n")}
	one, two := load(broken), load(broken)
	if one[b] == two[b] {
		t.Error("a parse with diagnostics was kept")
	}
	if back := load(nil); back[b] == first[b] || back[a] != first[a] {
		t.Error("b.hcl is kept by its last content, a.hcl by its only one")
	}
}

// TestParsesLimit: the files kept hold at most the limit's bytes, the
// least recently used going first, and a file larger than the limit is
// not kept.
func TestParsesLimit(t *testing.T) {
	file := func(src string) *hcl.File { return &hcl.File{Bytes: []byte(src)} }
	p := NewParses(10)
	a, b := file("aaaa"), file("bbbb")
	p.put("a", a)
	p.put("b", b)
	if p.get("a", []byte("aaaa")) != a {
		t.Fatal("a not kept")
	}
	p.put("c", file("cccc")) // 12 bytes: b, the least recently used, goes
	if p.get("a", []byte("aaaa")) != a || p.get("b", []byte("bbbb")) != nil || p.get("c", []byte("cccc")) == nil {
		t.Errorf("after c: a, c kept and b dropped, want %v", p.files)
	}
	if p.get("a", []byte("aaab")) != nil {
		t.Error("a found by its name with another content")
	}
	p.put("d", file("ddddddddddd"))
	if p.get("d", []byte("ddddddddddd")) != nil || p.size != 8 {
		t.Errorf("a file over the limit was kept (size %d)", p.size)
	}
	p.put("a", file("aa")) // replaces a's entry
	if p.size != 6 || p.get("a", []byte("aaaa")) != nil {
		t.Errorf("a's new content did not replace its old one (size %d)", p.size)
	}
	var none *Parses
	none.put("a", a)
	if none.get("a", []byte("aaaa")) != nil {
		t.Error("a nil Parses kept a file")
	}
}
