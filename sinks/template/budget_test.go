package template

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// One ${...} that builds a huge value by itself is refused like a render
// over max_size, before it is built: each of these would build from
// hundreds of megabytes to gigabytes from 3,000 records; refused, each
// allocates a few megabytes. So are nested %{ for } directives that
// write little but would run 9 million passes.
func TestBudgetBoundsOneInterpolation(t *testing.T) {
	const x = `join("", [for r in records : "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"])` // 300 KB
	for name, body := range map[string]string{
		"nested for":                `${join("", flatten([for a in records : [for b in records : "xxxxxxxx"]]))}`,
		"nested for, no fn":         `${length([for a in records : [for b in records : b.key]])}`,
		"splat in a for":            `${length([for a in records : records[*].key])}`,
		"join's separator":          `${join(` + x + `, [for r in records : r.key])}`,
		"replace":                   `${replace(` + x + `, "x", ` + x + `)}`,
		"regex replace":             `${replace(` + x + `, "/x/", "$0$0$0$0$0$0$0$0$0$0")}`,
		"format's verbs":            `${format(replace(` + x + `, "x", "%[1]s"), ` + x + `)}`,
		"formatlist":                `${join("", formatlist("%s%s%s%s", [for r in records : ` + x + `], "y", "z", "w"))}`,
		"split":                     `${length(split("", ` + x + `))}`,
		"template in a for":         `${join("", [for r in records : "${` + x + `}${` + x + `}"])}`,
		"object for":                `${length({for a in records : a.key => [for b in records : b.key]})}`,
		"through try":               `${try(join("", flatten([for a in records : [for b in records : "xxxxxxxx"]])), "")}x`,
		"directives writing little": `%{ for a in records }%{ for b in records }%{ if a.key == b.key }x%{ endif }%{ endfor }%{ endfor }`,
		"directives through HCL":    `%{ for a in records }%{ for b in records }%{ if upper(a.key) == b.key }x%{ endif }%{ endfor }%{ endfor }`,
		"jsonencode in a for":       `${join("", [for r in records : jsonencode(` + x + `)])}`,
	} {
		t.Run(name, func(t *testing.T) {
			f := open(t, "template = <<-EOT\n"+body+"\nEOT\nmax_size = \"1MiB\"")
			batch := make([]node.Entry, 3000)
			for i := range batch {
				batch[i] = node.Entry{Key: node.Key(fmt.Sprintf("k%05d", i)), Value: cty.EmptyObjectVal}
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			failed := f.round(batch, full)
			runtime.ReadMemStats(&after)
			if _, err := os.Stat(f.path); !os.IsNotExist(err) {
				t.Fatal("the render was written")
			}
			if err := failed[batch[0].Key]; !errors.Is(err, errTooLarge) && !strings.Contains(fmt.Sprint(err), "max_size") {
				t.Errorf("entry error %v, want the render refused as too large", err)
			}
			if n := f.count("pipeline_sink_template_renders_total", "result", "refused"); n != 1 {
				t.Errorf("renders_total{refused} = %v", n)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 96<<20 {
				t.Errorf("the render allocated %d MiB before it stopped", alloc>>20)
			}
		})
	}
}

// What a render builds within its budget renders as HCL gives it.
func TestBudgetKeepsRenders(t *testing.T) {
	f := open(t, `template = "${join(",", [for r in records : upper(r.key)])} ${length(records[*].key)} ${replace("a-b", "-", "+")} ${join(" ", formatlist("%s=%d", ["a", "b"], [1, 2]))}"`)
	f.put("x", cty.EmptyObjectVal, node.Round{})
	f.put("y", cty.EmptyObjectVal, full)
	if got, want := f.file(), "X,Y 2 a+b a=1 b=2"; got != want {
		t.Errorf("file %q, want %q", got, want)
	}
}

// Every function a template may call is either bounded before it runs or
// charged once it ran: a function added to the language must be placed.
func TestEveryFunctionBudgeted(t *testing.T) {
	for name := range schema.Functions("", nil) {
		if _, ok := estimates[name]; !ok && !slices.Contains(linear, name) && !passThrough[name] {
			t.Errorf("function %s is neither in estimates, linear nor passThrough", name)
		}
	}
}
