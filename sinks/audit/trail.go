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
	"strconv"
	"strings"
	"time"

	"github.com/pipeline/pipeline/internal/atomicfile"
)

type fsyncMode int

const (
	fsyncInterval fsyncMode = iota
	fsyncAlways
	fsyncNever
)

var fsyncModes = map[string]fsyncMode{"interval": fsyncInterval, "always": fsyncAlways, "never": fsyncNever}

// errNotOpen is returned by append before the trail could be opened.
var errNotOpen = errors.New("trail not open")

// trail is the writing side of one trail: the active file, its rotated
// siblings (path.1, path.2, …, oldest first) and the checkpoint. It is not
// safe for concurrent use; the target serialises it.
type trail struct {
	cfg  *config
	addr string // the sink's address, on the lines the trail writes itself
	gen  uint64 // config generation, on the lines the trail writes itself
	now  func() time.Time

	f      *os.File  // active file; nil when closed or stdout
	out    io.Writer // f, or standard output for path "-"
	size   int64     // bytes of f known good (a failed write is cut back to this)
	seq    uint64    // seq of the last line written
	head   [sha256.Size]byte
	first  uint64 // seq of the oldest line still present
	dirty  bool   // written since the last flush
	next   int    // index of the next rotated file
	buf    []byte
	events trailEvents
}

// trailEvents counts what the metrics show.
type trailEvents struct {
	lines, rotations, removed int
}

func (t *trail) isOpen() bool { return t.out != nil }

// open opens the active file and resumes the chain from the newest line of
// the trail. A file that ends in a partial line (a crash mid-write) is
// rotated away as it is, so verify reports it and the new lines chain on.
func (t *trail) open(stdout io.Writer) error {
	if t.cfg.path == "-" {
		t.out, t.first = stdout, 1
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(t.cfg.path), 0o750); err != nil {
		return fmt.Errorf("create directory of %s: %w", t.cfg.path, err)
	}
	rotated, err := rotatedFiles(t.cfg.path)
	if err != nil {
		return err
	}
	t.next = 1
	if n := len(rotated); n > 0 {
		t.next = rotated[n-1].index + 1
	}
	partial, err := t.resume(rotated)
	if err != nil {
		return err
	}
	f, err := openRegular(t.cfg.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", t.cfg.path, err)
	}
	st, err := f.Stat()
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("open %s: %w", t.cfg.path, err)
	}
	t.f, t.out, t.size = f, f, st.Size()
	if partial {
		return t.rotate("previous file ends in a partial line")
	}
	return nil
}

// resume reads the newest line of the trail (seq and hash) and the oldest
// line's seq, and says whether the active file ends in a partial line.
func (t *trail) resume(rotated []rotatedFile) (partial bool, err error) {
	files := make([]string, 0, len(rotated)+1)
	for _, r := range rotated {
		files = append(files, r.path)
	}
	files = append(files, t.cfg.path)
	t.seq, t.head, t.first = 0, zeroHash, 1
	for i := len(files) - 1; i >= 0; i-- {
		last, part, err := readLastLine(files[i])
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return false, err
		}
		partial = partial || (part && i == len(files)-1)
		if last == nil {
			continue
		}
		p, ok := parseLine(last)
		if !ok {
			return false, fmt.Errorf("resume trail: the last line of %s is not a trail line; move the file away to start a new trail", files[i])
		}
		t.seq, t.head = p.seq, p.hash
		break
	}
	for _, f := range files {
		if first, err := readFirstLine(f); err == nil {
			if p, ok := parseLine(first); ok {
				t.first = p.seq
			}
			break
		}
	}
	return partial, nil
}

// append writes l as the next line, rotating first when the file would
// outgrow max_size.
func (t *trail) append(l *line) error {
	if !t.isOpen() {
		return errNotOpen
	}
	b, sum, err := t.encode(l)
	if err != nil {
		return err
	}
	if t.f != nil && t.size > 0 && t.size+int64(len(b)) > t.cfg.maxSize {
		if err := t.rotate("max_size"); err != nil {
			return err
		}
		if b, sum, err = t.encode(l); err != nil {
			return err
		}
	}
	return t.put(l.seq, b, sum)
}

func (t *trail) encode(l *line) ([]byte, [sha256.Size]byte, error) {
	l.seq = t.seq + 1
	b, sum, err := l.encode(t.buf[:0], t.head)
	t.buf = b[:0]
	if err != nil {
		return nil, sum, fmt.Errorf("encode line %d: %w", l.seq, err)
	}
	return b, sum, nil
}

// write encodes and writes l without a size check.
func (t *trail) write(l *line) error {
	b, sum, err := t.encode(l)
	if err != nil {
		return err
	}
	return t.put(l.seq, b, sum)
}

// put writes one encoded line. A failed write is cut back, so the file
// never keeps half a line.
func (t *trail) put(seq uint64, b []byte, sum [sha256.Size]byte) error {
	n, err := t.out.Write(b)
	if err != nil {
		if t.f != nil && n > 0 {
			_ = t.f.Truncate(t.size)
		}
		return fmt.Errorf("write %s: %w", t.cfg.path, err)
	}
	t.size += int64(n)
	t.seq, t.head, t.dirty = seq, sum, true
	t.events.lines++
	return nil
}

// rotate renames the active file to the next index, opens a new one whose
// first line links to the old file's last hash, then applies retention.
func (t *trail) rotate(reason string) error {
	if err := t.syncFile(); err != nil {
		return err
	}
	if err := t.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", t.cfg.path, err)
	}
	t.f, t.out = nil, nil
	name := t.cfg.path + "." + strconv.Itoa(t.next)
	if err := os.Rename(t.cfg.path, name); err != nil {
		return fmt.Errorf("rotate %s: %w", t.cfg.path, err)
	}
	t.next++
	f, err := os.OpenFile(t.cfg.path, os.O_CREATE|os.O_EXCL|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open %s after rotation: %w", t.cfg.path, err)
	}
	t.f, t.out, t.size = f, f, 0
	t.events.rotations++
	l := line{op: opRotate, time: t.now(), node: t.addr, gen: t.gen, reason: reason,
		detail: map[string]any{"previous_file": filepath.Base(name)}}
	if err := t.write(&l); err != nil {
		return err
	}
	if err := t.retention(); err != nil {
		return err
	}
	return t.flush()
}

// retention deletes the oldest rotated files beyond max_files or older than
// max_age. Each deletion is first written as a line carrying the seq and
// hash it cuts at (the previous hash of the next file's first line), so
// verify accepts the trail starting there.
func (t *trail) retention() error {
	if t.f == nil || (t.cfg.maxFiles == 0 && t.cfg.maxAge == 0) {
		return nil
	}
	rotated, err := rotatedFiles(t.cfg.path)
	if err != nil {
		return err
	}
	for len(rotated) > 0 {
		victim := rotated[0]
		reason := ""
		switch {
		case t.cfg.maxFiles > 0 && len(rotated) > t.cfg.maxFiles:
			reason = "max_files"
		case t.cfg.maxAge > 0 && t.now().Sub(victim.modTime) > t.cfg.maxAge:
			reason = "max_age"
		default:
			return nil
		}
		successor := t.cfg.path
		if len(rotated) > 1 {
			successor = rotated[1].path
		}
		first, err := readFirstLine(successor)
		if err != nil {
			return fmt.Errorf("retention: read %s: %w", successor, err)
		}
		p, ok := parseLine(first)
		if !ok {
			return fmt.Errorf("retention: the first line of %s is not a trail line; %s is kept", successor, victim.path)
		}
		l := line{op: opRetention, time: t.now(), node: t.addr, gen: t.gen, reason: reason, detail: map[string]any{
			"file": filepath.Base(victim.path), "cut_seq": p.seq - 1, "cut_hash": hex.EncodeToString(p.prev[:])}}
		if err := t.write(&l); err != nil {
			return err
		}
		if err := t.syncFile(); err != nil {
			return err
		}
		if err := os.Remove(victim.path); err != nil {
			return fmt.Errorf("retention: %w", err)
		}
		t.first = p.seq
		t.events.removed++
		rotated = rotated[1:]
	}
	return nil
}

// syncFile flushes the active file to disk unless fsync = "never".
func (t *trail) syncFile() error {
	if t.f == nil || t.cfg.fsync == fsyncNever {
		return nil
	}
	if err := t.f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", t.cfg.path, err)
	}
	return nil
}

// flush syncs what was written since the last flush and then replaces the
// checkpoint, so the checkpoint never names a line that is not on disk.
func (t *trail) flush() error {
	if !t.dirty || t.f == nil {
		return nil
	}
	if err := t.syncFile(); err != nil {
		return err
	}
	t.dirty = false
	return t.writeCheckpoint()
}

// Checkpoint is the trail's head as last flushed.
type Checkpoint struct {
	Seq   uint64    `json:"seq"`
	Hash  string    `json:"hash"`
	Count uint64    `json:"count"` // lines in the files present when written
	File  string    `json:"file"`
	Time  time.Time `json:"time"`
}

func (t *trail) checkpointPath() string {
	if t.cfg.checkpoint != "" {
		return t.cfg.checkpoint
	}
	return t.cfg.path + ".checkpoint"
}

// writeCheckpoint replaces the checkpoint atomically (internal/atomicfile:
// a temporary file in the same directory, synced, renamed over the old
// one, and the directory synced, unless fsync is never).
func (t *trail) writeCheckpoint() error {
	c := Checkpoint{Seq: t.seq, Hash: hex.EncodeToString(t.head[:]), Count: t.seq - t.first + 1,
		File: filepath.Base(t.cfg.path), Time: t.now().UTC()}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	opt := atomicfile.Options{Mode: 0o600, UID: -1, GID: -1, NoSync: t.cfg.fsync == fsyncNever}
	if err := atomicfile.Write(t.checkpointPath(), append(b, '\n'), opt); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	return nil
}

// close flushes and closes the active file.
func (t *trail) close() error {
	if t.f == nil {
		t.out = nil
		return nil
	}
	if t.dirty && t.cfg.fsync == fsyncNever {
		// never fsyncs, but still leaves a checkpoint at a clean stop.
		t.dirty = false
		if err := t.writeCheckpoint(); err != nil {
			t.f.Close()
			return err
		}
	}
	err := t.flush()
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	t.f, t.out = nil, nil
	return err
}

// rotatedFile is one path.N sibling of the active file.
type rotatedFile struct {
	path    string
	index   int
	modTime time.Time
}

// rotatedFiles lists path.N, oldest (smallest N) first.
func rotatedFiles(path string) ([]rotatedFile, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var out []rotatedFile
	for _, e := range ents {
		idx, ok := rotationIndex(base, e.Name())
		if !ok || e.IsDir() {
			continue
		}
		full := filepath.Join(dir, e.Name())
		info, err := os.Stat(full) // through a symlink
		if err != nil {
			continue // removed meanwhile, or a dangling symlink
		}
		if !info.Mode().IsRegular() {
			return nil, notRegular(full, info.Mode())
		}
		out = append(out, rotatedFile{path: filepath.Join(dir, e.Name()), index: idx, modTime: info.ModTime()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].index < out[j].index })
	return out, nil
}

// rotationIndex returns N when name is base.N.
func rotationIndex(base, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, base+".")
	if !ok || rest == "" {
		return 0, false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

// readLastLine returns the last complete line of a file (without its
// newline; nil when there is none) and whether bytes follow it without a
// newline.
func readLastLine(path string) (last []byte, partial bool, err error) {
	f, err := openRegular(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	size := st.Size()
	for chunk := int64(64 << 10); ; chunk = min(chunk*4, maxLineBytes+1) {
		off := max(size-chunk, 0)
		buf := make([]byte, size-off)
		if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			return nil, false, fmt.Errorf("read %s: %w", path, err)
		}
		partial = len(buf) > 0 && buf[len(buf)-1] != '\n'
		end := bytes.LastIndexByte(buf, '\n')
		if end < 0 {
			if off == 0 {
				return nil, partial, nil
			}
			if chunk > maxLineBytes {
				return nil, false, fmt.Errorf("read %s: %w", path, errLineTooLong)
			}
			continue
		}
		start := lastLineStart(buf, end)
		if start < 0 && off > 0 {
			if chunk > maxLineBytes {
				return nil, false, fmt.Errorf("read %s: %w", path, errLineTooLong)
			}
			continue // the line may begin before this chunk
		}
		return buf[start+1 : end], partial, nil
	}
}

// readFirstLine returns the first line of a file without its newline.
func readFirstLine(path string) ([]byte, error) {
	f, err := openRegular(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := readLine(bufio.NewReader(f), nil)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s has no complete line", path)
		}
		return nil, err
	}
	return b[:len(b)-1], nil
}
