package main

import (
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/protocol"
)

// BenchmarkLSP1000 measures the language server on the 1,000-block
// configuration of BenchmarkValidate1000, over a pipe as an editor talks
// to it, with the GC setting of the lsp command (tuneGC) and without the
// typing debounce:
//
//	diagnostics  an edit (didChange) until its diagnostics are published
//	completion   a completion request inside a sink "ebpf_map" block until its answer
//	completion-after-edit  an edit of the file, then that completion request, until its
//	             answer (the server's default debounce, so its check waits for typing to pause)
func BenchmarkLSP1000(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(shortLivedGCPercent))
	name := filepath.Join(b.TempDir(), "big.hcl")
	good := bigConfig(1000)
	i := strings.Index(good, "sink \"ebpf_map\"")
	if i < 0 {
		b.Fatal("no ebpf_map sink in the generated configuration")
	}
	i += strings.Index(good[i:], "\n") + 1
	good = good[:i] + "  \n" + good[i:] // a blank line in the block, to complete on
	bad := strings.Replace(good, `"memory"`, `"memoryy"`, 1)
	if bad == good {
		b.Fatal("no mistake to type")
	}
	at := posOf(b, good, good[i-1:i+3], 3)
	c := startLSP(b)
	c.open(name, good)
	c.waitDiags(name, func(d []protocol.Diagnostic) bool { return len(d) == 0 })

	b.Run("diagnostics", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			n++
			if n%2 == 1 {
				c.change(name, bad)
				c.waitDiags(name, func(d []protocol.Diagnostic) bool { return len(d) == 1 })
			} else {
				c.change(name, good)
				c.waitDiags(name, func(d []protocol.Diagnostic) bool { return len(d) == 0 })
			}
		}
	})
	c.change(name, good)
	c.waitDiags(name, func(d []protocol.Diagnostic) bool { return len(d) == 0 })
	b.Run("completion", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if items := c.complete(name, at); len(items) == 0 {
				b.Fatal("no completion")
			}
		}
	})
	typing := startLSPWith(b, lspOptions(150*time.Millisecond))
	typing.open(name, good)
	typing.waitDiags(name, func(d []protocol.Diagnostic) bool { return len(d) == 0 })
	edited := strings.Replace(good, "\n  \n", "\n  i\n", 1) // a letter typed on the blank line
	b.Run("completion-after-edit", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			n++
			text := good
			if n%2 == 1 {
				text = edited
			}
			typing.change(name, text)
			if items := typing.complete(name, at); len(items) == 0 {
				b.Fatal("no completion")
			}
		}
	})
}
