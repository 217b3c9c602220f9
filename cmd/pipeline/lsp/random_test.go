package lsp

import (
	"math/rand"
	"testing"
	"time"

	"go.lsp.dev/protocol"
)

// TestRandomBuffers runs the handlers on random edits of the fuzz seeds,
// each under a deadline: in plain go test (FuzzHandlers only runs its
// seeds there) no handler may panic or hang on a half-typed buffer.
func TestRandomBuffers(t *testing.T) {
	seeds := [][]byte{[]byte(fuzzSeed), []byte("sink \"ebpf_map\" \"a\" {\n  type = \"\n  input = transform.\n"), []byte("a = {{{{[[[(((${\"\n}}}}"), []byte("x = <<EOT\n${a.\nEOT\n\xff\xfe\x00")}
	r := rand.New(rand.NewSource(1))
	alphabet := []byte("{}[]()\"$%~<>=.\n\r\t #/*abcxyz019é\xff\x00EOT<<-")
	for range 1000 {
		src := append([]byte(nil), seeds[r.Intn(len(seeds))]...)
		for k := r.Intn(6); k >= 0; k-- {
			switch r.Intn(3) {
			case 0:
				if len(src) > 0 {
					j := r.Intn(len(src))
					src = append(src[:j], src[j+1:]...)
				}
			case 1:
				j := r.Intn(len(src) + 1)
				src = append(src[:j], append([]byte{alphabet[r.Intn(len(alphabet))]}, src[j:]...)...)
			case 2:
				if len(src) > 2 {
					src = src[:r.Intn(len(src))]
				}
			}
		}
		line, col := uint16(r.Intn(30)), uint16(r.Intn(40))
		done := make(chan struct{})
		go func() {
			defer close(done)
			s := testServer()
			name := "/fuzz/main.hcl"
			s.docs[name] = src
			w, file := s.snapshot(fileURI(name))
			off := file.text.offset(protocol.Position{Line: uint32(line), Character: uint32(col)})
			_ = s.complete(w, file, off)
			_ = s.hover(w, file, off)
			_ = definition(w, file, off)
			_ = references(w, file, off, true)
			_ = symbols(file)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("hang on %q at %d:%d", src, line, col)
		}
	}
}
