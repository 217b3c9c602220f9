package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// wideChain is a static source, a chain of n filters and a log sink: a
// graph of n+2 columns, wider than a 1400 px window beside the side panel.
func wideChain(n int, out string) string {
	var b strings.Builder
	b.WriteString("source \"static\" \"s\" {\n  records = { a = 1, b = 2 }\n}\n")
	in := "source.static.s"
	for i := range n {
		fmt.Fprintf(&b, "transform \"filter\" \"f%d\" {\n  input = %s\n  where = true\n}\n", i, in)
		in = fmt.Sprintf("transform.filter.f%d", i)
	}
	fmt.Fprintf(&b, "sink \"log\" \"out\" {\n  input = %s\n  path  = %q\n}\n", in, out)
	return b.String()
}

// TestConsoleWideGraphWithPanel: in a 1400 px window with a node's panel
// open, a graph wider than the space left scrolls inside its own frame,
// which stays whole beside the panel, and every node can be scrolled into
// view. The graph used to be cut at the panel's edge: its frame ran under
// the panel and only the whole pane scrolled, its scroll bar at the foot of
// the page, far below the graph.
// PIPELINE_CONSOLE_SCREENSHOT_WIDE=file.png keeps a screenshot to look at.
func TestConsoleWideGraphWithPanel(t *testing.T) {
	dir := t.TempDir()
	addr, stop := startRun(t, dir, wideChain(7, filepath.Join(dir, "out.log")))
	defer stop()
	ctx, cancel := newBrowser(t)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1400, 900), chromedp.Navigate("http://"+addr+"/")); err != nil {
		t.Fatalf("load the console: %v", err)
	}
	waitJS(t, ctx, "nine nodes drawn", `document.querySelectorAll('g.node').length === 9`, 10*time.Second)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`g.node[data-addr="transform.filter.f3"] rect.box`))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the panel open", `!!document.querySelector('#detail pre.block')`, 5*time.Second)
	// The graph's frame lies whole beside the panel and scrolls itself, so
	// its scroll bar is right under the graph.
	framed, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const svg = document.getElementById('graph'), side = document.getElementById('side');
		const frame = [svg, svg.parentElement].find(e => getComputedStyle(e).borderLeftStyle !== 'none');
		const f = frame.getBoundingClientRect();
		return f.right <= side.getBoundingClientRect().left + 1 && frame.scrollWidth > frame.clientWidth &&
			svg.getBoundingClientRect().width > f.width })()`))
	if err != nil {
		t.Fatal(err)
	}
	if !framed {
		t.Error("the graph's frame runs under the side panel, or does not scroll the graph")
	}
	// Every node scrolled into view lies inside the frame, left of the panel.
	for _, addr := range []string{"source.static.s", "transform.filter.f3", "sink.log.out"} {
		fits, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
			const svg = document.getElementById('graph'), side = document.getElementById('side');
			const frame = [svg, svg.parentElement].find(e => getComputedStyle(e).borderLeftStyle !== 'none');
			const n = document.querySelector('g.node[data-addr=%q] rect.box');
			n.scrollIntoView({block: 'nearest', inline: 'nearest'});
			const f = frame.getBoundingClientRect(), r = n.getBoundingClientRect(), s = side.getBoundingClientRect();
			return r.width > 100 && r.left >= f.left - 1 && r.right <= f.right + 1 && r.right <= s.left + 1 })()`, addr)))
		if err != nil {
			t.Fatal(err)
		}
		if !fits {
			t.Errorf("%s cannot be scrolled into view beside the panel", addr)
		}
	}
	if path := os.Getenv("PIPELINE_CONSOLE_SCREENSHOT_WIDE"); path != "" {
		shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
