package template

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/atomicfile"
	"github.com/pipeline/pipeline/internal/regfile"
	"github.com/pipeline/pipeline/schema"
)

// The state file (.NAME.pipeline-state beside the rendered file NAME) says
// which entries the file is the render of. The file's text cannot say it,
// so without it a restarted sink would know none of them until its first
// render, and that render would not be braked: an input emptied while
// pipeline was down would empty the file. With it, the first Actual of a
// new target returns the entries the state file lists, provided the file's
// sha256 is the one the state file names; anything else (no state file, a
// corrupt, truncated, oversized or foreign one, a file edited since) gives
// what Actual gave without it: no entries.
//
// A sensitive value is listed as a keyed digest (HMAC-SHA256 under the
// state file's own random salt), never as its text: the rendered file is
// the one place its text goes. Such an entry is kept with a placeholder
// value until the input sends it again (see Target.unknown).

// stateVersion is the version of the state file's format; a file of
// another version is ignored.
const stateVersion = 1

// stateSuffix ends a state file's name.
const stateSuffix = ".pipeline-state"

// statePath is the state file of the rendered file at path.
func statePath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+stateSuffix)
}

// stateDoc is the state file: JSON.
type stateDoc struct {
	Version int    `json:"version"`
	Path    string `json:"path"` // the rendered file it describes
	Node    string `json:"node"` // the address of the sink that wrote it
	SHA256  string `json:"sha256"`
	// Salt keys the digests of the sensitive values (hex).
	Salt string `json:"salt"`
	// Types are the values' types (cty's JSON), each listed once.
	Types   []json.RawMessage `json:"types"`
	Entries []json.RawMessage `json:"entries"` // stateEntry each, sorted by key
}

// stateEntry is one entry of the state file: its key and either its value
// (cty's JSON, of the type Types[Type]) or, for a sensitive value, its
// digest.
type stateEntry struct {
	Key       string          `json:"key"`
	Type      *int            `json:"type,omitempty"`
	Value     json.RawMessage `json:"value,omitempty"`
	Sensitive string          `json:"sensitive_digest,omitempty"`
}

// encoded is one entry as the state file lists it, but for its type's
// index: the key and the value as JSON, and the value's type (cty's JSON;
// empty for a NilVal or a sensitive value).
type encoded struct {
	key, typ string
	rest     []byte // what follows the type: ,"value":V} or ,"sensitive_digest":D}
}

// newSalt is a fresh salt for a state file's digests.
func newSalt() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return b
}

// valueDigest is the keyed digest of v (its marks removed): the same value
// always gives the same digest under one salt.
func valueDigest(salt []byte, v cty.Value) (string, error) {
	raw, _ := v.UnmarkDeep()
	typ, val, err := encodeValue(raw)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, salt)
	m.Write(typ)
	m.Write([]byte{0})
	m.Write(val)
	return hex.EncodeToString(m.Sum(nil)), nil
}

// encodeValue is v's type and value as cty's JSON; a NilVal has neither.
func encodeValue(v cty.Value) (typ, val []byte, err error) {
	if v == cty.NilVal {
		return nil, nil, nil
	}
	if typ, err = ctyjson.MarshalType(v.Type()); err != nil {
		return nil, nil, err
	}
	if val, err = ctyjson.Marshal(v, v.Type()); err != nil {
		return nil, nil, err
	}
	return typ, val, nil
}

// encodeEntry is e as the state file lists it.
func encodeEntry(e node.Entry, salt []byte) (encoded, error) {
	if !utf8.ValidString(string(e.Key)) {
		// JSON would read it back as another key.
		return encoded{}, fmt.Errorf("key %q is not UTF-8", e.Key)
	}
	key, err := json.Marshal(string(e.Key))
	if err != nil {
		return encoded{}, err
	}
	out := encoded{key: string(key)}
	if schema.IsSensitive(e.Value) {
		d, err := valueDigest(salt, e.Value)
		if err != nil {
			return encoded{}, fmt.Errorf("entry %q: %w", e.Key, err)
		}
		out.rest = digestRest(d)
		return out, nil
	}
	typ, val, err := encodeValue(e.Value)
	if err != nil {
		return encoded{}, fmt.Errorf("entry %q: %w", e.Key, err)
	}
	out.typ = string(typ)
	out.rest = append(append([]byte(`,"value":`), val...), '}')
	return out, nil
}

// digestRest is the end of a sensitive entry: its digest.
func digestRest(digest string) []byte { return []byte(`,"sensitive_digest":"` + digest + `"}`) }

// placeholder is the value an entry known by its digest only is kept
// with: sensitive, and equal to no value the input sends (the sink loop
// then sends the real one, an update that changes no byte of the file).
func placeholder(digest string) cty.Value {
	return schema.MarkSensitive(cty.StringVal("(a sensitive value known by its digest only: " + digest + ")"))
}

// savedState is a state file read and matched with the file.
type savedState struct {
	entries map[node.Key]node.Entry
	unknown map[node.Key]string // the sensitive entries: their digests
	salt    []byte
	node    string
}

// errStateMismatch is a state file describing other bytes than the file's.
var errStateMismatch = errors.New("the file changed since pipeline wrote it (edited by someone else, or a write was cut short)")

// readState reads the state file of path (a regular file of at most limit
// bytes) and returns its entries when it describes data, the file's bytes.
// The error says why it does not; fs.ErrNotExist when there is none.
func readState(path string, limit int64, data []byte) (*savedState, error) {
	b, _, err := regfile.Read(statePath(path), limit)
	if err != nil {
		return nil, err
	}
	return parseState(path, b, data)
}

func parseState(path string, b, data []byte) (*savedState, error) {
	var doc stateDoc
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("corrupt: %w", err)
	}
	if dec.More() {
		return nil, errors.New("corrupt: text after the JSON document")
	}
	if doc.Version != stateVersion {
		return nil, fmt.Errorf("version %d, this pipeline reads version %d", doc.Version, stateVersion)
	}
	if doc.Path != path {
		return nil, fmt.Errorf("it describes %q, not this file", doc.Path)
	}
	sum := sha256.Sum256(data)
	if doc.SHA256 != hex.EncodeToString(sum[:]) {
		return nil, errStateMismatch
	}
	salt, err := hex.DecodeString(doc.Salt)
	if err != nil || len(salt) < 16 {
		return nil, errors.New("corrupt: no salt")
	}
	types := make([]cty.Type, len(doc.Types))
	for i, raw := range doc.Types {
		if types[i], err = ctyjson.UnmarshalType(raw); err != nil {
			return nil, fmt.Errorf("corrupt: type %d: %w", i, err)
		}
	}
	st := &savedState{entries: make(map[node.Key]node.Entry, len(doc.Entries)), unknown: map[node.Key]string{}, salt: salt, node: doc.Node}
	for i, raw := range doc.Entries {
		var se stateEntry
		if err := json.Unmarshal(raw, &se); err != nil {
			return nil, fmt.Errorf("corrupt: entry %d: %w", i, err)
		}
		k := node.Key(se.Key)
		if _, dup := st.entries[k]; dup {
			return nil, fmt.Errorf("corrupt: key %q listed twice", se.Key)
		}
		e := node.Entry{Key: k}
		switch {
		case se.Sensitive != "":
			if _, err := hex.DecodeString(se.Sensitive); err != nil || len(se.Sensitive) != 2*sha256.Size || se.Value != nil {
				return nil, fmt.Errorf("corrupt: entry %q: a bad digest", se.Key)
			}
			e.Value = placeholder(se.Sensitive)
			st.unknown[k] = se.Sensitive
		case se.Type != nil:
			if *se.Type < 0 || *se.Type >= len(types) {
				return nil, fmt.Errorf("corrupt: entry %q: type %d of %d", se.Key, *se.Type, len(types))
			}
			var err error
			if e.Value, err = ctyjson.Unmarshal(se.Value, types[*se.Type]); err != nil {
				return nil, fmt.Errorf("corrupt: entry %q: value: %w", se.Key, err)
			}
		case se.Value != nil:
			return nil, fmt.Errorf("corrupt: entry %q: a value without its type", se.Key)
		}
		st.entries[k] = e
	}
	return st, nil
}

// stateWriter keeps the state file of one target: what the state file on
// disk describes. Each entry's line is kept on its record (encoded
// once per change of the entry).
type stateWriter struct {
	path string // the state file
	salt []byte
	// buf is the last state file's bytes, whose space the next one reuses.
	buf []byte
	// sum is the digest of the file the state file on disk describes with
	// the entries then; "" when it may describe nothing current.
	sum string
	// dirty says entries changed since the state file was written.
	dirty bool
	// warned is the last failure logged, so a failing write logs once.
	warned string
}

func newStateWriter(path string) *stateWriter {
	return &stateWriter{path: statePath(path), salt: newSalt()}
}

// marshal is the state file of the file at path (sha256 digest) rendered
// from recs, sorted by key. It fails on an entry it cannot encode, or when
// it would be larger than limit. The bytes are valid until the next call.
func (w *stateWriter) marshal(path, address, digest string, recs []*record, limit int64) ([]byte, error) {
	head, err := json.Marshal(stateDoc{Version: stateVersion, Path: path, Node: address, SHA256: digest, Salt: hex.EncodeToString(w.salt)})
	if err != nil {
		return nil, err
	}
	// head ends with "types":null,"entries":null}: the entries come
	// first, then the types they refer to (known once every entry is).
	head = bytes.TrimSuffix(head, []byte(`"types":null,"entries":null}`))
	index := map[string]int{}
	var types []string
	var lastTyp, lastRef string
	buf := bytes.NewBuffer(w.buf[:0])
	buf.Write(head)
	buf.WriteString(`"entries":[`)
	for i, r := range recs {
		if r.line == nil {
			en, err := encodeEntry(node.Entry{Key: node.Key(r.key), Value: r.value}, w.salt)
			if err != nil {
				return nil, err
			}
			r.line = &en
		}
		en := r.line
		if i > 0 {
			buf.WriteString(",")
		}
		buf.WriteString("\n{\"key\":")
		buf.WriteString(en.key)
		if en.typ != "" {
			if en.typ != lastTyp { // most entries share their neighbour's type
				n, ok := index[en.typ]
				if !ok {
					n = len(types)
					index[en.typ] = n
					types = append(types, en.typ)
				}
				lastTyp, lastRef = en.typ, `,"type":`+strconv.Itoa(n)
			}
			buf.WriteString(lastRef)
		}
		buf.Write(en.rest)
		if int64(buf.Len()) > limit {
			return nil, fmt.Errorf("larger than max_size (%d bytes)", limit)
		}
	}
	buf.WriteString("\n],\"types\":[")
	for i, t := range types {
		if i > 0 {
			buf.WriteString(",")
		}
		buf.WriteString(t)
	}
	buf.WriteString("]}\n")
	if int64(buf.Len()) > limit {
		return nil, fmt.Errorf("larger than max_size (%d bytes)", limit)
	}
	w.buf = buf.Bytes()
	return w.buf, nil
}

// remove deletes the state file, so that none describes the file.
func (w *stateWriter) remove() error {
	if err := os.Remove(w.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// writeState writes data as the state file, with the file's mode and
// owner.
func (w *stateWriter) write(data []byte, opt atomicfile.Options) error {
	return atomicfile.Write(w.path, data, opt)
}

// restore takes the entries of the state file into the target when it
// describes d, the file just read, and logs why not otherwise (once: only
// a new target's first read comes here). It returns the file as read: a
// state file written just before its file was swapped in (swap writes it
// first) matches the file read once more.
func (t *Target) restore(d onDisk) onDisk {
	path := t.s.path
	log := t.env.Logger.With("file", path, "state_file", t.state.path)
	st, err := readState(path, t.s.maxSize, d.data)
	if errors.Is(err, errStateMismatch) {
		if again, rerr := readRegular(path, t.s.maxSize); rerr == nil && again.existed && !bytes.Equal(again.data, d.data) {
			if st, err = readState(path, t.s.maxSize, again.data); err == nil {
				d = again
			}
		}
	}
	const without = "; the sink knows the file's entries only once it renders it, and that first render is not braked by max_deletes"
	switch {
	case errors.Is(err, fs.ErrNotExist):
		log.Info("no state file beside the file" + without)
		return d
	case errors.Is(err, errStateMismatch):
		log.Warn("state file ignored: " + err.Error() + without)
		return d
	case err != nil:
		log.Warn("state file ignored"+without, "err", err)
		return d
	}
	sum := sha256.Sum256(d.data)
	digest := hex.EncodeToString(sum[:])
	t.entries, t.unknown, t.seeded = st.entries, st.unknown, true
	t.recs, t.secret = table{}, map[node.Key]bool{}
	for k, e := range st.entries {
		r := t.s.newRecord(e)
		if schema.IsSensitive(e.Value) {
			t.secret[k] = true
		}
		if dg, ok := st.unknown[k]; ok {
			// Listed by the digest the state file gave, not by one of the
			// placeholder (the secret's text is never known here).
			if key, err := json.Marshal(string(k)); err == nil {
				r.line = &encoded{key: string(key), rest: digestRest(dg)}
			}
		}
		t.recs.set(r)
	}
	t.state.salt, t.state.sum, t.state.dirty = st.salt, digest, false
	t.disk = &fileState{data: d.data, digest: digest, entries: maps.Clone(st.entries)}
	t.changed, t.ours = true, true
	attrs := []any{"entries", len(st.entries)}
	if len(st.unknown) > 0 {
		attrs = append(attrs, "sensitive", len(st.unknown))
	}
	if st.node != t.s.address {
		attrs = append(attrs, "written_by", st.node)
	}
	log.Info("entries of the file read from its state file", attrs...)
	return d
}

// keepRestored applies entries while it holds entries taken from the state
// file whose sensitive values it knows by digest only, which it cannot
// render: while entries is still what the state file listed, the file on
// disk is its render and is kept; once anything else changed, the render
// is refused (the file kept) until the input sends those values again or
// their deletes are applied.
func (t *Target) keepRestored(full bool) error {
	n := len(t.unknown)
	if !t.seeded {
		err := fmt.Errorf("the render needs %d sensitive values the file held before the restart, which the state file lists by digest only: "+
			"the file is kept until the input sends them again or their deletes are applied", n)
		return t.problem("render", err, "render refused; the file is kept")
	}
	if full && t.disk != nil {
		cur, err := readRegular(t.s.path, t.s.maxSize)
		if err != nil {
			return t.problem("write", err, "cannot read the file; will retry")
		}
		if !cur.existed || !bytes.Equal(cur.data, t.disk.data) {
			t.disk = nil
		}
	}
	if t.disk == nil {
		err := fmt.Errorf("the file changed, and cannot be restored: %d sensitive values it held before the restart are known by digest only", n)
		return t.problem("write", err, "file changed by someone else; not restored")
	}
	clear(t.unsettled)
	t.problem("render", nil, "")
	t.problem("write", nil, "")
	return nil
}

// saveState makes the state file describe the file (digest) as the render
// of entries, unless it does already. A failure is logged once and keeps
// nothing from writing the file: the state file it leaves names another
// digest, so it is ignored at the next start (plan mode writes nothing).
func (t *Target) saveState(digest string) {
	w := t.state
	if t.plan || (w.sum == digest && !w.dirty) {
		return
	}
	w.sum = ""
	data, err := w.marshal(t.s.path, t.s.address, digest, t.recs.sorted(), t.s.maxSize)
	if err == nil {
		// Not fsynced: a state file a crash cuts short or loses is corrupt
		// or names another digest, and ignored; the cost of that is the
		// brake on the first render after a crash, not a wrong entry.
		err = w.write(data, atomicfile.Options{Mode: t.s.mode, UID: t.own.uid, GID: t.own.gid, NoSync: true})
	} else if rerr := w.remove(); rerr != nil {
		err = fmt.Errorf("%w; remove the old one: %v", err, rerr)
	}
	if err != nil {
		t.mu.Lock()
		msg := t.redactor().String(err.Error())
		t.mu.Unlock()
		if msg != w.warned {
			w.warned = msg
			t.env.Logger.Warn("cannot write the state file; after a restart the first render will not be braked", "file", t.s.path, "state_file", w.path, "err", msg)
		}
		return
	}
	if w.warned != "" {
		w.warned = ""
		t.env.Logger.Info("state file written again", "file", t.s.path, "state_file", w.path)
	}
	w.sum, w.dirty = digest, false
}

// planRestored plans desired when it holds an entry taken from the state
// file whose sensitive value is known by its digest only (plan passes
// those whose deletes the brake would hold), which cannot be rendered.
// As apply (keepRestored): when desired is what the state file listed
// (the values sent again equal to their digests), the file stays as it
// is; otherwise run refuses the render and keeps the file, which note
// says. ok is false when desired holds no such entry: render it.
func (t *Target) planRestored(desired []node.Entry) (note string, ok bool) {
	if len(t.unknown) == 0 || t.disk == nil {
		return "", false
	}
	same := len(desired) == len(t.entries)
	blocked := 0
	for _, e := range desired {
		h, ok := t.entries[e.Key]
		d, unknown := t.unknown[e.Key]
		switch {
		case unknown && h.Value.RawEquals(e.Value):
			blocked++
		case unknown:
			got, err := valueDigest(t.state.salt, e.Value)
			same = same && err == nil && got == d
		default:
			same = same && ok && h.Same(e)
		}
	}
	switch {
	case blocked == 0:
		return "", false
	case same:
		return "", true
	}
	return fmt.Sprintf("(no diff: the render needs %d sensitive values the file holds, which its state file lists by digest only: "+
		"run refuses the render and keeps the file until the input sends them again or their deletes are applied)\n", blocked), true
}

// unmasked counts the sensitive values the file on disk (cur) holds, as
// its state file says, that desired does not hold: their text is in the
// file, unknown to plan, which could not mask it in a diff.
func (t *Target) unmasked(cur []byte, desired []node.Entry) int {
	if len(t.unknown) == 0 || t.disk == nil || !bytes.Equal(cur, t.disk.data) {
		return 0
	}
	kept := 0
	for _, e := range desired {
		if d, ok := t.unknown[e.Key]; ok {
			if got, err := valueDigest(t.state.salt, e.Value); err == nil && got == d {
				kept++
			}
		}
	}
	return len(t.unknown) - kept
}
