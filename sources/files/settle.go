package files

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"

	"github.com/pipeline/pipeline/internal/regfile"
)

// Bad input must lose nothing. A file that was read and parsed once keeps
// that content while it cannot be read or no longer parses, and a pattern
// that suddenly matches nothing (a directory deleted or unmounted) keeps the
// files it matched last, unless the configuration says an empty match is
// fine (allow_empty). Each kept file is a problem: counted, named in the
// node's health, logged.

// settled is what a reload publishes: the records of every file's
// documents, and the problems that made it keep older content.
type settled struct {
	col      *collector
	files    int
	problems []string
	// empty holds the patterns that match nothing on the first read, with
	// allow_empty off: the source does not mark itself synced.
	empty []string
	// unread holds the files that matched on the first read but could
	// not be read (a special file aside, which is never data): the source
	// does not mark itself synced.
	unread []string
}

// goodFile is a file that parsed (run.good holds it by path): the digest
// of its last content (the content itself is not kept: its records are),
// and its entries.
type goodFile struct {
	sum     [sha256.Size]byte
	pattern int32
	round   uint32 // the last reload that kept it
	entries []entry
}

// settle combines a snapshot with the last good content of each file. A
// file whose bytes did not change keeps its entries: only changed files
// are parsed and converted again. The map of good files is updated in
// place, and the files it no longer holds are deleted at the end: a second
// map of every file held through a reload added to its peak
// (docs/performance.md, F2).
//
// A read cut short by ctx returns ctx's error, and the run publishes nothing.
func (r *run) settle(ctx context.Context, snap snapshot) (settled, error) {
	out := settled{col: r.src.newCollector(r.records)}
	if r.good == nil {
		r.good = map[string]*goodFile{}
	}
	r.round++
	keep := func(path, why string) bool {
		prev, ok := r.good[path]
		if !ok {
			return false
		}
		prev.round = r.round
		out.col.add(prev.entries)
		out.problems = append(out.problems, why+"; keeping its last good content")
		return true
	}
	for _, f := range snap.files {
		sum := f.sum
		if prev, ok := r.good[f.path]; ok && prev.sum == sum {
			prev.pattern, prev.round = int32(f.pattern), r.round // in place: the map keeps the path its records name
			out.col.add(prev.entries)
			continue
		}
		entries, broken, err := r.src.fileEntries(ctx, f)
		if err != nil {
			return out, err
		}
		if broken != nil {
			if !keep(f.path, fmt.Sprintf("%s does not parse: %v", broken.at(), broken.err)) {
				out.col.add(entries) // never good: its documents are skipped, as bad ones
			}
			continue
		}
		g := &goodFile{pattern: int32(f.pattern), round: r.round, sum: sum, entries: entries}
		r.good[f.path] = g
		out.col.add(g.entries)
	}
	for _, e := range snap.readErr {
		switch {
		case keep(e.path, fmt.Sprintf("cannot read %v", e.err)):
		case errors.Is(e.err, regfile.ErrNotRegular) || r.loaded:
			out.problems = append(out.problems, fmt.Sprintf("cannot read %v", e.err))
		default:
			out.unread = append(out.unread, e.err.Error())
		}
	}
	for _, i := range snap.unmatched {
		if r.src.allowEmpty {
			continue
		}
		pattern := r.src.patterns[i]
		if !r.loaded {
			out.empty = append(out.empty, pattern)
			continue
		}
		kept := 0
		for _, path := range sortedPaths(r.good) {
			if int(r.good[path].pattern) == i && keep(path, fmt.Sprintf("no file matches %s (set allow_empty = true if that is expected): %s", pattern, path)) {
				kept++
			}
		}
		if kept == 0 {
			out.problems = append(out.problems, fmt.Sprintf("no file matches %s (set allow_empty = true if that is expected)", pattern))
		}
	}
	for path, g := range r.good {
		if g.round != r.round {
			delete(r.good, path)
		}
	}
	out.files = len(r.good)
	return out, nil
}

func sortedPaths(m map[string]*goodFile) []string {
	out := make([]string, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
