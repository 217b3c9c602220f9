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
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/regfile"
)

// A trail records changes, and only changes. The target therefore knows
// what the trail says each key holds (the ledger): the digest of the value
// of the key's last upsert line, for every key whose last data line is an
// upsert. Actual returns it, so the engine, which diffs the input against
// Actual on every start, reload and full reconcile, writes a line only for
// a key whose value differs from the trail's last word on it, and a delete
// line for a key the trail holds and the input no longer wants (prune).
// Without it, every restart and every reload that rebuilt the sink wrote
// an upsert line for every unchanged key.
//
// The ledger is read from the trail's files when the target opens (every
// file still present, oldest first) and kept as lines are queued. Lines
// with include_values = true are compared by the sha256 of their value's
// JSON, which is the digest written with include_values = false, so
// switching the attribute writes no line. A key whose last line was in a
// file retention removed is written again once; so is everything on a
// trail written to standard output (path "-"), which cannot be read back.

// ledger maps a key (as written on its lines) to its value's digest.
type ledger map[string][sha256.Size]byte

// dataLine is what the ledger reads of a line.
type dataLine struct {
	Op     string          `json:"op"`
	Node   string          `json:"node"`
	Key    string          `json:"key"`
	Value  json.RawMessage `json:"value"`
	Digest string          `json:"digest"`
}

// maxLedgerLine bounds a line the ledger reads; the key of a longer line
// is written again at the next start.
const maxLedgerLine = 1 << 20

// readLedger replays the data lines of node addr in the trail at path.
// A missing trail is empty; a line that is not JSON is skipped (verify
// reports it).
func readLedger(path, addr string) (ledger, error) {
	l := ledger{}
	if path == "-" {
		return l, nil
	}
	rotated, err := rotatedFiles(path)
	if errors.Is(err, os.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, err
	}
	files := make([]string, 0, len(rotated)+1)
	for _, r := range rotated {
		files = append(files, r.path)
	}
	for _, f := range append(files, path) {
		if err := l.replay(f, addr); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// replay applies one file's lines to l.
func (l ledger) replay(path, addr string) error {
	// Not a regular file (a FIFO, a device): the trail's own checks say so.
	f, _, err := regfile.Open(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, regfile.ErrNotRegular) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, maxLedgerLine)
	addrField := []byte(`"node":` + string(appendString(nil, addr)))
	for {
		b, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if err = skipLine(r); err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("read %s: %w", path, err)
			}
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil // a partial last line is not a line
			}
			return fmt.Errorf("read %s: %w", path, err)
		}
		if !bytes.Contains(b, addrField) {
			continue
		}
		l.apply(b, addr)
	}
}

// skipLine reads past the rest of a line too long for the reader's buffer.
func skipLine(r *bufio.Reader) error {
	for {
		_, err := r.ReadSlice('\n')
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// apply takes one line of the trail.
func (l ledger) apply(b []byte, addr string) {
	var d dataLine
	if json.Unmarshal(b, &d) != nil || d.Node != addr {
		return
	}
	switch d.Op {
	case opDelete:
		delete(l, d.Key)
	case opUpsert:
		var sum [sha256.Size]byte
		switch {
		case d.Value != nil:
			sum = sha256.Sum256(d.Value)
		case strings.HasPrefix(d.Digest, "sha256:"):
			if n, err := hex.Decode(sum[:], []byte(d.Digest[len("sha256:"):])); err != nil || n != sha256.Size {
				return
			}
		}
		l[d.Key] = sum
	}
}

// entries is the ledger as the target's state: Data is the digest, which
// the engine compares with Prepare's; Value shows it in a plan.
func (l ledger) entries() []node.Entry {
	out := make([]node.Entry, 0, len(l))
	for k, sum := range l {
		out = append(out, node.Entry{Key: k, Value: cty.StringVal(digestText(sum)), Data: append([]byte(nil), sum[:]...)})
	}
	return out
}

// ledgerDigest returns the digest text of an entry entries made (what the
// engine hands back to delete a key read back from the trail), and false
// for an entry of a record. A record's value cannot pass for one: it would
// be a string equal to the digest of its own JSON.
func ledgerDigest(e node.Entry) (string, bool) {
	if len(e.Data) != sha256.Size || e.Value.IsMarked() || !e.Value.IsKnown() || e.Value.IsNull() || e.Value.Type() != cty.String {
		return "", false
	}
	d := digestText([sha256.Size]byte(e.Data))
	return d, e.Value.AsString() == d
}

func digestText(sum [sha256.Size]byte) string { return "sha256:" + hex.EncodeToString(sum[:]) }
