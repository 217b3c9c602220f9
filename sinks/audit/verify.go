package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ProblemKind says how a trail was broken.
type ProblemKind string

// The kinds verify names.
const (
	Edited    ProblemKind = "edited"    // a line's bytes changed, or the chain was rewritten from it
	Inserted  ProblemKind = "inserted"  // a line that was never written sits in the chain
	Removed   ProblemKind = "removed"   // lines (or a whole file) are missing
	Reordered ProblemKind = "reordered" // lines are present but out of order
	Truncated ProblemKind = "truncated" // a file ends mid-line, or lines were cut off the end
)

// Problem is the first broken line of a trail.
type Problem struct {
	File   string
	Line   int // 1-based
	Kind   ProblemKind
	Detail string
}

func (p *Problem) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Kind, p.Detail)
}

// Report is the outcome of Verify.
type Report struct {
	Files      []string
	Lines      uint64
	FirstSeq   uint64 // seq of the first line read
	HeadSeq    uint64 // seq of the last line read
	Head       string // hash of the last line read
	Checkpoint *Checkpoint
	Problem    *Problem // nil when the trail is intact
	Elapsed    time.Duration
}

// lookahead bounds how far verify reads past a broken line to tell the kinds
// apart.
const lookahead = 64

// parsed is what verify reads of a line: the fixed fields at both ends. The
// middle is only hashed, never decoded, except for the lines the trail
// writes about itself.
type parsed struct {
	seq        uint64
	op         []byte // points into the line: valid while the line is
	prev, hash [sha256.Size]byte
	body       []byte // the line without its hash suffix
}

// parseLine reads `{"seq":N,"op":"OP",…,"prev":"HEX","hash":"HEX"}`.
func parseLine(b []byte) (parsed, bool) {
	var p parsed
	rest, ok := bytes.CutPrefix(b, []byte(`{"seq":`))
	if !ok {
		return p, false
	}
	i := 0
	var seq uint64
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' && i < 19 {
		seq = seq*10 + uint64(rest[i]-'0')
		i++
	}
	if i == 0 {
		return p, false
	}
	rest, ok = bytes.CutPrefix(rest[i:], []byte(`,"op":"`))
	end := bytes.IndexByte(rest, '"')
	n := len(b)
	if !ok || end < 0 || n < hashSuffixLen+prevSuffixLen+len(`{"seq":0,"op":""}`) {
		return p, false
	}
	p.seq, p.op = seq, rest[:end]
	hs, ps := b[n-hashSuffixLen:], b[n-hashSuffixLen-prevSuffixLen:n-hashSuffixLen]
	if !bytes.HasPrefix(hs, []byte(`,"hash":"`)) || !bytes.HasSuffix(hs, []byte(`"}`)) ||
		!bytes.HasPrefix(ps, []byte(`,"prev":"`)) || ps[len(ps)-1] != '"' {
		return p, false
	}
	if _, err := hex.Decode(p.hash[:], hs[9:9+2*sha256.Size]); err != nil {
		return p, false
	}
	if _, err := hex.Decode(p.prev[:], ps[9:9+2*sha256.Size]); err != nil {
		return p, false
	}
	p.body = b[:n-hashSuffixLen]
	return p, true
}

// selfConsistent says whether the line's hash is its own prev and content
// hashed: false means its bytes were changed.
func (p *parsed) selfConsistent() bool { return chainHash(p.prev, p.body) == p.hash }

// detail decodes the detail object of a line the trail wrote about itself.
func (p *parsed) detail() map[string]any {
	var l struct {
		Detail map[string]any `json:"detail"`
	}
	_ = json.Unmarshal(append(p.body, '}'), &l)
	return l.Detail
}

// TrailFiles expands the paths given to verify: an active file brings its
// rotated siblings (path.1, path.2, …), and the result is ordered oldest
// first, each active file after its rotated ones.
func TrailFiles(paths []string) ([]string, error) {
	type file struct {
		base  string
		index int // rotated index; active files sort last
		path  string
	}
	seen := map[string]bool{}
	var out []file
	add := func(f file) {
		if !seen[f.path] {
			seen[f.path] = true
			out = append(out, f)
		}
	}
	for _, p := range paths {
		dir, name := filepath.Dir(p), filepath.Base(p)
		if i := strings.LastIndexByte(name, '.'); i > 0 {
			if idx, ok := rotationIndex(name[:i], name); ok {
				add(file{filepath.Join(dir, name[:i]), idx, p})
				continue
			}
		}
		rotated, err := rotatedFiles(p)
		if err != nil {
			return nil, err
		}
		for _, r := range rotated {
			add(file{p, r.index, r.path})
		}
		if _, err := os.Stat(p); err == nil {
			add(file{p, int(^uint(0) >> 1), p})
		} else if len(rotated) == 0 {
			return nil, fmt.Errorf("no trail at %s: %w", p, err)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].base != out[j].base {
			return out[i].base < out[j].base
		}
		return out[i].index < out[j].index
	})
	res := make([]string, len(out))
	for i, f := range out {
		res[i] = f.path
	}
	return res, nil
}

// ReadCheckpoint reads a checkpoint file.
func ReadCheckpoint(path string) (*Checkpoint, error) {
	b, err := readBounded(path, 1<<20)
	if err != nil {
		return nil, err
	}
	var c Checkpoint
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return &c, nil
}

// Verify checks the chain of the given files in order (see TrailFiles) and,
// when checkpoint is not empty, that the trail reaches the checkpoint's head
// with the same hash. It returns the first broken line in Report.Problem; an
// error means a file could not be read.
func Verify(files []string, checkpoint string) (Report, error) {
	start := time.Now()
	rep := Report{Files: files}
	if checkpoint != "" {
		c, err := ReadCheckpoint(checkpoint)
		if err != nil {
			return rep, err
		}
		rep.Checkpoint = c
	}
	v := verifier{files: files, rep: &rep, cuts: map[uint64][sha256.Size]byte{}}
	err := scan(files, 0, 1, v.visit)
	if err == nil && rep.Problem == nil {
		v.finish()
	}
	rep.Elapsed = time.Since(start)
	return rep, err
}

type verifier struct {
	files   []string
	rep     *Report
	started bool
	expect  uint64 // seq the next line must have
	prev    [sha256.Size]byte
	anchor  *cut // where the trail starts when it does not start at seq 1
	cuts    map[uint64][sha256.Size]byte
	last    position
}

type cut struct {
	seq  uint64
	hash [sha256.Size]byte
	at   position
}

type position struct {
	file int
	line int
}

func (v *verifier) fail(at position, kind ProblemKind, format string, args ...any) bool {
	v.rep.Problem = &Problem{File: v.files[at.file], Line: at.line, Kind: kind, Detail: fmt.Sprintf(format, args...)}
	return false
}

// visit checks one line; it returns false to stop at the first problem.
func (v *verifier) visit(at position, b []byte, newline bool) bool {
	v.last = at
	p, ok := parseLine(b)
	if !newline {
		return v.fail(at, Truncated, "the file ends in the middle of a line")
	}
	if !ok {
		if v.started && v.nextChains(at) {
			return v.fail(at, Inserted, "this line is not a trail line, and the next line chains to the one before it")
		}
		return v.fail(at, Edited, "this line is not a well-formed trail line")
	}
	if !v.started {
		v.started, v.expect, v.prev = true, p.seq, p.prev
		v.rep.FirstSeq = p.seq
		if p.seq != 1 || p.prev != zeroHash {
			v.anchor = &cut{seq: p.seq - 1, hash: p.prev, at: at}
		}
	}
	if p.seq != v.expect || p.prev != v.prev || !p.selfConsistent() {
		return v.classify(at, &p)
	}
	v.accept(at, &p)
	if c := v.rep.Checkpoint; c != nil && c.Seq == p.seq && c.Hash != hex.EncodeToString(p.hash[:]) {
		return v.fail(at, Edited, "seq %d does not have the hash the checkpoint recorded: the chain was rewritten up to here", p.seq)
	}
	return true
}

func (v *verifier) accept(at position, p *parsed) {
	v.prev, v.expect = p.hash, p.seq+1
	v.rep.Lines++
	v.rep.HeadSeq, v.rep.Head = p.seq, hex.EncodeToString(p.hash[:])
	if string(p.op) == opRetention {
		d := p.detail()
		s, _ := d["cut_seq"].(float64)
		h, _ := d["cut_hash"].(string)
		var hash [sha256.Size]byte
		if _, err := hex.Decode(hash[:], []byte(h)); err == nil && len(h) == 2*sha256.Size {
			v.cuts[uint64(s)] = hash
		}
	}
}

// classify names what happened at a line that does not continue the chain.
func (v *verifier) classify(at position, p *parsed) bool {
	switch {
	case p.seq > v.expect:
		if v.later(at, v.expect) {
			return v.fail(at, Reordered, "seq %d comes before seq %d", p.seq, v.expect)
		}
		missing := fmt.Sprintf("seq %d to %d are missing", v.expect, p.seq-1)
		if string(p.op) == opRotate && at.line == 1 {
			if prev, _ := p.detail()["previous_file"].(string); prev != "" {
				missing += fmt.Sprintf("; this file follows %s, which is not among the files verified", prev)
			}
		}
		return v.fail(at, Removed, "%s", missing)
	case p.seq < v.expect:
		if v.nextChains(at) {
			return v.fail(at, Inserted, "seq %d was already seen; the next line chains to the one before this", p.seq)
		}
		return v.fail(at, Inserted, "seq %d was already seen here, where seq %d belongs", p.seq, v.expect)
	case !p.selfConsistent():
		if v.nextChains(at) {
			return v.fail(at, Inserted, "this line was never part of the chain: the next line chains to the one before it")
		}
		return v.fail(at, Edited, "the content of seq %d does not match its hash", p.seq)
	}
	return v.fail(at, Edited, "seq %d does not link to the hash of seq %d: the chain was rewritten from here", p.seq, p.seq-1)
}

// nextChains says whether the line after at continues the chain as if the
// line at at were not there.
func (v *verifier) nextChains(at position) bool {
	ok := false
	_ = scan(v.files, at.file, at.line+1, func(_ position, b []byte, _ bool) bool {
		p, good := parseLine(b)
		ok = good && p.seq == v.expect && p.prev == v.prev && p.selfConsistent()
		return false
	})
	return ok
}

// later says whether seq appears, chained to the current head, within the
// next lookahead lines after at.
func (v *verifier) later(at position, seq uint64) bool {
	found, n := false, 0
	_ = scan(v.files, at.file, at.line+1, func(_ position, b []byte, _ bool) bool {
		p, good := parseLine(b)
		if good && p.seq == seq && p.prev == v.prev && p.selfConsistent() {
			found = true
		}
		n++
		return !found && n < lookahead
	})
	return found
}

// finish checks what only the end of the trail can tell: that a trail not
// starting at seq 1 was cut by retention, and that it reaches the checkpoint.
func (v *verifier) finish() {
	if !v.started {
		if c := v.rep.Checkpoint; c != nil && c.Seq > 0 {
			v.rep.Problem = &Problem{File: v.files[len(v.files)-1], Line: 1, Kind: Truncated,
				Detail: fmt.Sprintf("the trail is empty but the checkpoint records seq %d", c.Seq)}
		}
		return
	}
	if a := v.anchor; a != nil {
		if h, ok := v.cuts[a.seq]; !ok || h != a.hash {
			v.fail(a.at, Removed, "the trail starts at seq %d, and no retention line records deleting seq %d and before", a.seq+1, a.seq)
			return
		}
	}
	if c := v.rep.Checkpoint; c != nil && c.Seq > v.rep.HeadSeq {
		v.fail(position{v.last.file, v.last.line + 1}, Truncated,
			"the trail ends at seq %d but the checkpoint records seq %d: lines were cut off the end", v.rep.HeadSeq, c.Seq)
	}
}

// scan calls visit with every line of files from files[fi], line ln on,
// with whether the line ended in a newline, until visit returns false.
func scan(files []string, fi, ln int, visit func(at position, b []byte, newline bool) bool) error {
	for ; fi < len(files); fi, ln = fi+1, 1 {
		more, err := scanFile(files, fi, ln, visit)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

func scanFile(files []string, fi, from int, visit func(position, []byte, bool) bool) (bool, error) {
	f, err := openRegular(files[fi], os.O_RDONLY, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var long []byte
	for n := 1; ; {
		b, err := readLine(r, long)
		if errors.Is(err, errLineTooLong) {
			return false, fmt.Errorf("read %s: line %d: %w", files[fi], n, err)
		}
		if len(b) == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				return true, nil
			}
			return false, fmt.Errorf("read %s: %w", files[fi], err)
		}
		newline := len(b) > 0 && b[len(b)-1] == '\n'
		if newline {
			b = b[:len(b)-1]
		}
		if n >= from && !visit(position{fi, n}, b, newline) {
			return false, nil
		}
		n++
		if err != nil && !errors.Is(err, io.EOF) {
			return false, fmt.Errorf("read %s: %w", files[fi], err)
		}
	}
}
