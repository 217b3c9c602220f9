package files

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/kobject"
	"github.com/pipeline/pipeline/internal/regfile"
	"github.com/pipeline/pipeline/schema"
)

// maxFileSize bounds one manifest file, like file() in the configuration:
// a glob that matches /dev/zero or a huge file must not exhaust memory.
const maxFileSize = 16 << 20

// file is one matched file's content.
type file struct {
	path    string
	pattern int // index of the first pattern that matched it
	sum     [sha256.Size]byte
	data    []byte // nil when the run already holds the entries of this content (readDropping)
}

// readError is a matched file that could not be read.
type readError struct {
	path    string
	pattern int
	err     error
}

// snapshot is what one read of the files found.
type snapshot struct {
	files     []file
	hash      [sha256.Size]byte
	readErr   []readError // files that matched but could not be read
	unmatched []int       // patterns that matched no file
	dirs      []string
}

// read expands the patterns and reads every matched regular file, in path
// order. It also returns the directories to watch.
func (s *Source) read() snapshot { return s.readDropping(nil) }

// readDropping is read, except that a file whose digest is the one known
// for its path comes without its content: a run holds the entries of that
// content already, and holding every file's bytes through a reload after
// one change added to its peak (docs/performance.md, F2).
func (s *Source) readDropping(known map[string]*goodFile) snapshot {
	snap := snapshot{files: make([]file, 0, len(known))} // a reload expects the files it holds
	seen := map[string]bool{}
	dirs := map[string]bool{}
	for i, p := range s.patterns {
		dirs[watchDir(p)] = true
		matches, _ := filepath.Glob(p) // patterns were checked when decoding
		found := false
		for _, m := range matches {
			if seen[m] {
				found = true
				continue
			}
			seen[m] = true
			st, err := os.Stat(m)
			if err != nil || st.IsDir() {
				continue // a dangling symlink or a directory (ConfigMap volume internals)
			}
			found = true
			dirs[filepath.Dir(m)] = true
			data, err := readRegular(m)
			if err != nil {
				snap.readErr = append(snap.readErr, readError{path: m, pattern: i, err: err})
				continue
			}
			f := file{path: m, pattern: i, sum: sha256.Sum256(data), data: data}
			if g, ok := known[m]; ok && g.sum == f.sum {
				f.data = nil
			}
			snap.files = append(snap.files, f)
		}
		if !found {
			snap.unmatched = append(snap.unmatched, i)
		}
	}
	sort.Slice(snap.files, func(i, j int) bool { return snap.files[i].path < snap.files[j].path })
	h := sha256.New()
	for _, f := range snap.files {
		fmt.Fprintf(h, "%s\x00", f.path)
		h.Write(f.sum[:])
	}
	for _, e := range snap.readErr {
		fmt.Fprintf(h, "%s\x00%s\x00", e.path, e.err)
	}
	fmt.Fprintf(h, "%v", snap.unmatched)
	h.Sum(snap.hash[:0])
	for d := range dirs {
		snap.dirs = append(snap.dirs, d)
	}
	sort.Strings(snap.dirs)
	return snap
}

// readRegular reads a regular file of at most maxFileSize bytes
// (regfile.Read): a FIFO or device matched by a glob (or swapped in after
// a Stat) can neither block nor stream forever, and a file's content is
// held in a buffer of its size until it is parsed (docs/performance.md,
// F1). A special file wraps regfile.ErrNotRegular: never data, so it is
// skipped rather than waited for.
func readRegular(path string) ([]byte, error) {
	data, _, err := regfile.Read(path, maxFileSize)
	return data, err
}

// watchDir returns the directory to watch for a pattern: its longest
// directory prefix without glob characters, or the nearest existing parent
// of it, so that a directory created later is noticed.
func watchDir(pattern string) string {
	dir := filepath.Dir(pattern)
	for strings.ContainsAny(dir, `*?[\`) {
		dir = filepath.Dir(dir)
	}
	for {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}

// document is one object or item found in a file, or why it is not one.
type document struct {
	path   string         // the file
	where  string         // path, "path document N" (and "item M" inside a List)
	line   int            // the line in the file; 0 when unknown
	obj    map[string]any // format kubernetes
	item   any            // the other formats
	err    error
	broken bool // err is a syntax error: the file itself is bad
}

// at is where the document is, for logs: "path:line" and what names the
// document inside the file ("path:12 document 3").
func (d document) at() string {
	if d.line > 0 && strings.HasPrefix(d.where, d.path) {
		return fmt.Sprintf("%s:%d%s", d.path, d.line, d.where[len(d.path):])
	}
	return d.where
}

// utf8BOM is the byte-order mark some editors (Excel, Notepad) write at
// the start of a UTF-8 file. It is no part of the content in any format.
var utf8BOM = []byte("\xef\xbb\xbf")

// parseObjects yields the documents of a file of Kubernetes objects. YAML
// files may hold several documents; JSON is YAML. A List's items are
// expanded.
func parseObjects(ctx context.Context, f file, yield func(document) bool) {
	if isJSON(f.data) {
		v, err := decodeData(f.data)
		if err != nil {
			yield(brokenJSON(f, err))
			return
		}
		for _, d := range objectDocs(f.path, f.path, 0, v) {
			if !yield(d) {
				return
			}
		}
		return
	}
	if err := schema.CheckDataDepth(f.data); err != nil {
		yield(document{path: f.path, where: f.path, err: err, broken: true})
		return
	}
	yamlDocs(ctx, f, func(where string, root *yaml.Node, v any) []document {
		return objectDocs(f.path, where, root.Line, v)
	}, yield)
}

// isJSON reports whether data is one JSON object or array, which reads as
// one YAML document of the same value: it is decoded as JSON alone, as
// kubectl does, without the YAML reader's copies (docs/performance.md, F1).
func isJSON(data []byte) bool {
	data = bytes.TrimLeft(data, " \t\r\n")
	return len(data) > 0 && (data[0] == '{' || data[0] == '[') && json.Valid(data)
}

// objectDocs makes the documents of one decoded value of format
// kubernetes: the object, or a List's items.
func objectDocs(path, where string, line int, v any) []document {
	if v == nil {
		return nil // empty document: only comments or whitespace
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return []document{{path: path, where: where, line: line, err: fmt.Errorf("a document must be an object, not %s", typeName(v))}}
	}
	kind, _ := obj["kind"].(string)
	if items, ok := obj["items"].([]any); ok && strings.HasSuffix(kind, "List") {
		var out []document
		for j, it := range items {
			w := fmt.Sprintf("%s item %d", where, j)
			m, ok := it.(map[string]any)
			if !ok {
				out = append(out, document{path: path, where: w, line: line, err: fmt.Errorf("a list item must be an object, not %s", typeName(it))})
				continue
			}
			out = append(out, document{path: path, where: w, obj: m, err: validate(m)})
		}
		return out
	}
	return []document{{path: path, where: where, obj: obj, err: validate(obj)}}
}

// typeName names a decoded JSON value's type in the words of JSON.
func typeName(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a number"
}

func validate(obj map[string]any) error {
	for _, f := range []string{"apiVersion", "kind"} {
		if s, _ := obj[f].(string); s == "" {
			return fmt.Errorf("not a Kubernetes object: %s is missing", f)
		}
	}
	md, _ := obj["metadata"].(map[string]any)
	if s, _ := md["name"].(string); s == "" {
		return errors.New("not a Kubernetes object: metadata.name is missing")
	}
	if l, ok := md["labels"]; ok && l != nil {
		m, ok := l.(map[string]any)
		if !ok {
			return errors.New("metadata.labels must be a map of strings")
		}
		for k, v := range m {
			if _, ok := v.(string); !ok {
				return fmt.Errorf("label %q must be a string", k)
			}
		}
	}
	return nil
}

// skip is one document or object not emitted.
type skip struct {
	where, reason string
	err           error
}

// records turns the files into records: documents are filtered by kind,
// apiVersion and selector, pruned, keyed and converted. When several
// objects have one key, the smallest namespace/name provides it (ties: the
// first by file path, then position), the rule of source "kubernetes".
func (s *Source) records(files []file) (records []node.Record, objects int, skips []skip) {
	c := s.newCollector(0)
	for _, f := range files {
		entries, _, _ := s.fileEntries(context.Background(), f)
		c.add(entries)
	}
	return c.done()
}

// fileEntries parses f and makes the entry of each document as soon as it
// is read, so that a file's decoded documents are never all held at once.
// broken is the first document that does not parse (nil when the file
// parsed); err is ctx's error when the read was cut short.
func (s *Source) fileEntries(ctx context.Context, f file) (entries []entry, broken *document, err error) {
	s.parse(ctx, f, func(d document) bool {
		if d.broken && broken == nil {
			b := d
			broken = &b
		}
		if s.format == formatKubernetes {
			entries = s.appendObject(entries, d)
		} else {
			entries = s.appendItem(entries, d)
		}
		return ctx.Err() == nil
	})
	return entries, broken, ctx.Err()
}

// entry is what one document of a file gives, before keys are compared
// across files: a record, or (odd) why the document gives none. A run
// keeps each file's entries in place of its content, so that a reload
// re-parses only the files that changed and the others' records keep
// their values (converting every unchanged file again would hold both
// sets at once). A record's key, object and place are read from the record
// itself, so that the common entry costs its record and nothing more
// (docs/performance.md, F1).
type entry struct {
	rec node.Record
	odd *oddEntry // nil for a record
}

// oddEntry is a document that gives no record: skipped, or an object
// that does not convert (it still takes part in the choice of its key's
// provider, and is reported unless another takes the key).
type oddEntry struct {
	skip           *skip
	where, key, id string
	convErr        error
}

// key, id and where are the entry's key, the object's namespace/name
// (the identity index_by ties are decided by; empty for an item) and its
// place in the files, for logs.
func (e *entry) key() string {
	if e.odd != nil {
		return e.odd.key
	}
	return e.rec.Key
}

func (e *entry) id() string {
	if e.odd != nil {
		return e.odd.id
	}
	return recordID(e.rec)
}

func (e *entry) where() string {
	if e.odd != nil {
		return e.odd.where
	}
	return recordWhere(e.rec)
}

// recordID is the namespace/name of the object a record comes from;
// empty for an item of a data format.
func recordID(r node.Record) string {
	if r.Origin.Name == "" {
		return ""
	}
	return r.Origin.Namespace + "/" + r.Origin.Name
}

// recordWhere is where a record was read: "path:line" in line-based
// formats, else the document's name (document.at).
func recordWhere(r node.Record) string {
	if r.Origin.Line > 0 {
		return fmt.Sprintf("%s:%d", r.Origin.File, r.Origin.Line)
	}
	return r.Origin.File
}

// skipped is the entry of a document not emitted.
func skipped(where, reason string, err error) entry {
	return entry{odd: &oddEntry{skip: &skip{where, reason, err}}}
}

// appendObject filters, prunes, keys and converts one document of format
// kubernetes.
func (s *Source) appendObject(out []entry, d document) []entry {
	if d.err != nil {
		return append(out, skipped(d.at(), kobject.ReasonBadDocument, d.err))
	}
	if !s.matches(d.obj) {
		return out
	}
	s.pruner.Prune(d.obj)
	key, err := s.keyer.Key(d.obj)
	if err != nil {
		return append(out, skipped(d.at(), kobject.ReasonIndexMissing, err))
	}
	v, err := packed(d.obj)
	if err != nil {
		return append(out, entry{odd: &oddEntry{where: d.where, key: key, id: objectID(d.obj), convErr: err}})
	}
	return append(out, entry{rec: node.Record{Key: key, Value: v, Origin: s.origin(d, key)}})
}

// collector makes the records of the files' entries, one file at a time.
type collector struct {
	byKey   map[string]int // a key's record in records
	records []node.Record
	objects int
	skips   []skip
}

// newCollector returns a collector sized for n records (a reload expects
// as many as the last one gave), so that its map and slice do not grow
// through copies.
func (s *Source) newCollector(n int) *collector {
	return &collector{byKey: make(map[string]int, n), records: make([]node.Record, 0, n)}
}

// add takes the entries of one file.
func (c *collector) add(entries []entry) {
	for i := range entries {
		e := &entries[i]
		if e.odd != nil && e.odd.skip != nil {
			if e.odd.skip.reason != kobject.ReasonBadDocument {
				c.objects++ // an object that matched, without the key index_by names
			}
			c.skips = append(c.skips, *e.odd.skip)
			continue
		}
		c.objects++
		key := e.key()
		at, dup := c.byKey[key]
		if dup && recordID(c.records[at]) <= e.id() {
			c.skips = append(c.skips, skip{e.where(), kobject.ReasonDuplicateKey, fmt.Errorf("key %q is provided by %s", key, recordWhere(c.records[at]))})
			continue
		}
		if e.odd != nil {
			c.skips = append(c.skips, skip{e.odd.where, kobject.ReasonUnconvertible, e.odd.convErr})
			continue
		}
		if dup { // this object's smaller id takes the key over
			c.skips = append(c.skips, skip{recordWhere(c.records[at]), kobject.ReasonDuplicateKey, fmt.Errorf("key %q is provided by %s", key, e.where())})
			c.records[at] = e.rec
			continue
		}
		c.byKey[key] = len(c.records)
		c.records = append(c.records, e.rec)
	}
}

// done returns the records, sorted by key, the objects matched and the
// documents skipped.
func (c *collector) done() (records []node.Record, objects int, skips []skip) {
	sort.Slice(c.records, func(i, j int) bool { return c.records[i].Key < c.records[j].Key })
	return c.records, c.objects, c.skips
}

// origin is a record's provenance: the file and document it was read
// from, and the object's namespace and name. These are cut from the key
// when it is namespace/name (the default), so that the record does not
// keep the decoded object's strings as well.
func (s *Source) origin(d document, key string) *node.Origin {
	md, _ := d.obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	uid, _ := md["uid"].(string)
	switch n := len(ns); {
	case n == 0 && key == name:
		name = key
	case len(key) == n+1+len(name) && key[:n] == ns && key[n] == '/' && key[n+1:] == name:
		ns, name = key[:n], key[n+1:]
	}
	return &node.Origin{Source: s.address, File: d.where, Namespace: ns, Name: name, UID: uid}
}

// objectID is an object's namespace/name, the identity index_by ties are
// decided by.
func objectID(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	return ns + "/" + name
}

func (s *Source) matches(obj map[string]any) bool {
	if s.kind != "" && obj["kind"] != s.kind {
		return false
	}
	if s.apiVersion != "" && obj["apiVersion"] != s.apiVersion {
		return false
	}
	if s.selector.Empty() {
		return true // no labels to copy
	}
	md, _ := obj["metadata"].(map[string]any)
	raw, _ := md["labels"].(map[string]any)
	set := make(labels.Set, len(raw))
	for k, v := range raw {
		set[k], _ = v.(string)
	}
	return s.selector.Matches(set)
}
