package lsp

import (
	"github.com/pipeline/pipeline/cmd/pipeline/configtest"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"go.lsp.dev/protocol"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
	"github.com/pipeline/pipeline/sinks/ebpfmap"
	"github.com/pipeline/pipeline/sources/static"
	"github.com/pipeline/pipeline/transforms/debounce"
	"github.com/pipeline/pipeline/transforms/extract"
)

// kubeSpec stands in for the kubernetes source (whose client libraries
// would make the fuzzing build slow): completion reads only its Spec.
func kubeSpec() node.Spec {
	return node.Spec{Kind: node.KindSource, Type: "kubernetes", Summary: "Objects of a Kubernetes resource.", Output: node.Objects,
		Body:      schema.Block{Attrs: []schema.Attribute{schema.String("resource").Required()}},
		NewSource: func(node.Build) (node.Source, hcl.Diagnostics) { return nil, nil }}
}

func testServer() *Server {
	reg := node.NewRegistry(kubeSpec(), static.Spec(), extract.Spec(), debounce.Spec(), ebpfmap.Spec())
	return &Server{opts: Options{Registry: reg, Format: func(string, []byte) ([]byte, error) { return nil, nil },
		Check:    func(string, map[string][]byte) Checked { return Checked{} },
		TestFile: configtest.FileBlock, CheckTest: configtest.Check},
		funcs: schema.Functions(".", nil), docs: map[string][]byte{}, versions: map[string]int32{},
		cache: map[string]*parsed{}, indexed: map[string]*workspace{}, good: map[string]*parsed{}, sound: map[string]*workspace{}, dirty: map[string]bool{}, published: map[string]map[string]bool{}, built: map[string]map[string]any{}, kick: make(chan struct{}, 1)}
}

const fuzzSeed = `variable "v" { default = "x" }
locals { base = var.v }
source "kubernetes" "pods" {
  resource = "pods"
}
transform "extract" "ips" {
  input    = source.kubernetes.pods
  for_each = try(object.status.podIPs, [])
  key      = each.value.ip
  value    = { pod = object.metadata.name, "é😀" = local.base }
}
sink "ebpf_map" "m" {
  input = transform.extract.ips
  pin   = "/sys/fs/bpf/x"
  key { type = "ip" }
  value {
    type = "u32"
    from = 1
  }
}
`

// FuzzHandlers runs every request handler at positions in random buffers:
// none may panic, whatever the text (half-typed, binary, unbalanced,
// deeply nested) and wherever the cursor, even past the end.
func FuzzHandlers(f *testing.F) {
	f.Add([]byte(fuzzSeed), uint16(200), uint16(5))
	f.Add([]byte(fuzzSeed[:300]), uint16(7), uint16(40))
	f.Add([]byte("sink \"ebpf_map\" \"a\" {\n  type = \"\n  input = transform.\n"), uint16(2), uint16(20))
	f.Add([]byte("a = {{{{[[[(((${\"\n}}}}"), uint16(0), uint16(3))
	f.Add([]byte("x = <<EOT\n${a.\nEOT\n\xff\xfe\x00"), uint16(1), uint16(4))
	f.Add([]byte("é😀 = \"é😀\"\r\n"), uint16(0), uint16(3))
	s := testServer()
	f.Add([]byte("test \"t\" {\n  given \"source.\n  expect \"sink.s.a\" {\n    at = \"1s\"\n    state = {\n"), uint16(1), uint16(18))
	// Each text is also a config test file's, checked as the server
	// checks one against a configuration of one source and one sink.
	nodes := map[string]any{"source.static.s": nil, "sink.log.s": nil}
	f.Fuzz(func(t *testing.T, src []byte, line, col uint16) {
		for _, name := range []string{"/fuzz/main.hcl", "/fuzz/main.test.hcl"} {
			s.docs[name] = src
			w, file := s.snapshot(fileURI(name))
			p := protocol.Position{Line: uint32(line % 64), Character: uint32(col)}
			off := file.text.offset(p)
			if off < 0 || off > len(src) {
				t.Fatalf("offset %d out of [0,%d]", off, len(src))
			}
			_ = file.text.position(off)
			_ = s.complete(w, file, off)
			_ = s.hover(w, file, off)
			_ = definition(w, file, off)
			_ = references(w, file, off, true)
			_ = symbols(file)
			_ = s.format(fileURI(name))
			for _, d := range []hcl.Diagnostic{{Subject: &hcl.Range{Filename: name, Start: hcl.Pos{Line: int(line), Column: int(col), Byte: int(col)}}}} {
				_ = file.text.rangeOf(*d.Subject)
			}
			if isTestFile(name) {
				_ = s.checkTest(name, src, nodes)
			}
		}
	})
}

// TestInputNotANode: an input naming a local, not a node, is no upstream.
func TestInputNotANode(t *testing.T) {
	s := testServer()
	name := "/fuzz/main.hcl"
	s.docs[name] = []byte("locals { x = 1 }\ntransform \"extract\" \"e\" {\n  input = local.x\n  where = object.\n}\n")
	w, f := s.snapshot(fileURI(name))
	if got := s.complete(w, f, len(s.docs[name])-3); len(got) != 0 {
		t.Errorf("fields of no upstream: %v", got)
	}
}
