package template

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/haproxy"
	"github.com/pipeline/pipeline/internal/redact"
)

// PlanFile implements node.Document: the unified diff from the file on
// disk to the render of desired, every sensitive value masked (those of
// the records and the configuration's sensitive variables). Nothing is
// written and no command runs.
func (t *Target) PlanFile(_ context.Context, desired []node.Entry) (node.FilePlan, error) {
	fp := node.FilePlan{Path: t.s.path}
	if note, ok := t.planRestored(desired); ok {
		fp.Exists, fp.Diff = true, note
		return fp, nil
	}
	rend, err := t.s.render(desired)
	if err != nil {
		return fp, err
	}
	d, err := readRegular(t.s.path, t.s.maxSize)
	if err != nil {
		return fp, err
	}
	cur, existed := d.data, d.existed
	fp.Exists = existed
	if existed && string(cur) == string(rend.data) {
		return fp, nil
	}
	fp.Changed = true
	if n := t.unmasked(cur, desired); n > 0 {
		fp.Diff = fmt.Sprintf("--- %s\n+++ %s (rendered)\n(no diff: the file on disk holds %d sensitive values the render does not, which plan cannot mask: its state file lists them by digest only)\n",
			t.s.path, t.s.path, n)
		return fp, nil
	}
	red := redact.New(t.s.secrets)
	red.Add(rend.secrets)
	fp.Diff = unifiedDiff(t.s.path, red.String(string(cur)), red.String(string(rend.data)))
	if t.s.runtime != nil {
		fp.Diff = red.String(runtimePlan(cur, rend.data, existed)) + "\n" + fp.Diff
	}
	return fp, nil
}

// runtimePlan is the line heading the diff with a runtime block: how the
// change would reach the program, taken that it runs the file on disk.
func runtimePlan(cur, next []byte, existed bool) string {
	if !existed {
		return "# check, swap and reload: no file on disk yet"
	}
	u := haproxy.Diff(cur, next)
	if u.Reload != "" {
		return "# check, swap and reload: " + u.Reload
	}
	return "# runtime update, no check, no reload (if HAProxy runs the file on disk): " + describeOps(u)
}

// diffLimit bounds the text plan diffs: difflib's matching grows with the
// product of the two sides' lines, so a larger file gets its sizes only.
const diffLimit = 4 << 20

// unifiedDiff is the diff from a to b with three lines of context.
func unifiedDiff(path, a, b string) string {
	if len(a) > diffLimit || len(b) > diffLimit {
		return fmt.Sprintf("--- %s\n+++ %s (rendered)\n(no diff: %d bytes on disk, %d rendered; a diff is shown up to %d bytes)\n",
			path, path, len(a), len(b), diffLimit)
	}
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: difflib.SplitLines(a), B: difflib.SplitLines(b),
		FromFile: path, ToFile: path + " (rendered)", Context: 3})
	if err != nil {
		return fmt.Sprintf("(no diff: %v)", err)
	}
	return strings.TrimSuffix(d, "\n") + "\n"
}

// explainLines bounds the lines Explain lists.
const explainLines = 20

// Explain implements node.Explainer: which lines of the rendered file key
// produced (the lines the render has and a render without the key does
// not), marked as not in the file when the file does not hold that
// render, and a failing reload, masked. Why the file does not hold the
// render (render error, check refused, write failed) is the entries'
// own error, which explain shows beside this: it is not repeated here.
func (t *Target) Explain(key node.Key) []string {
	t.mu.Lock()
	red := t.redactor()
	var out []string
	if msg, ok := t.problems["reload"]; ok {
		out = append(out, fmt.Sprintf("%s reload failed: %s", t.s.path, msg))
	}
	t.mu.Unlock()
	if p, ok := t.paths[key]; ok {
		out = append(out, fmt.Sprintf("%s: the key's last change: %s", t.s.path, red.String(p.String())))
	}
	if _, ok := t.entries[key]; !ok || t.last == nil {
		return out
	}
	records := t.recs.sorted()
	without := make([]*record, 0, len(records)-1)
	for _, r := range records {
		if r.key != string(key) {
			without = append(without, r)
		}
	}
	less, err := t.s.renderRecords(without, len(t.secret) > 0)
	if err != nil {
		return append(out, fmt.Sprintf("the file renders without %s only with an error: %s", key, red.String(err.Error())))
	}
	where := t.s.path
	if t.disk == nil || !bytes.Equal(t.disk.data, t.last.data) {
		where += " (rendered, not in the file)"
	}
	a, b := difflib.SplitLines(string(less.data)), difflib.SplitLines(string(t.last.data))
	var lines []string
	for _, op := range difflib.NewMatcher(a, b).GetOpCodes() {
		if op.Tag != 'i' && op.Tag != 'r' {
			continue
		}
		for j := op.J1; j < op.J2; j++ {
			lines = append(lines, fmt.Sprintf("%s:%d: %s", where, j+1, red.String(strings.TrimRight(b[j], "\n"))))
		}
	}
	if len(lines) == 0 {
		return append(out, fmt.Sprintf("%s: the key changes no line of the file", where))
	}
	if len(lines) > explainLines {
		lines = append(lines[:explainLines], fmt.Sprintf("... and %d more lines", len(lines)-explainLines))
	}
	return append(out, lines...)
}

var _ node.Explainer = (*Target)(nil)
