package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fuzzTrail is a 31-line trail (and its checkpoint) written once per process.
var fuzzTrail struct {
	data, checkpoint []byte
}

func loadFuzzTrail(t testing.TB) {
	if fuzzTrail.data != nil {
		return
	}
	dir := t.TempDir()
	s := build(t, dir, `fsync = "never"`)
	s.Now = func() time.Time { return time.Unix(1700000000, 0) }
	writeTrail(t, s, 30)
	var err error
	if fuzzTrail.data, err = os.ReadFile(filepath.Join(dir, "trail.jsonl")); err != nil {
		t.Fatal(err)
	}
	if fuzzTrail.checkpoint, err = os.ReadFile(filepath.Join(dir, "trail.jsonl.checkpoint")); err != nil {
		t.Fatal(err)
	}
}

// tamper applies one of the tamperings verify must catch, chosen by op, at
// positions a and b. It returns the data unchanged when the choice is a no-op.
func tamper(data []byte, op uint8, a, b uint16, c byte) []byte {
	lines := bytes.SplitAfter(data, []byte("\n"))
	lines = lines[:len(lines)-1] // the empty tail after the last newline
	i, j := int(a)%len(lines), int(b)%len(lines)
	join := func(ls [][]byte) []byte { return bytes.Join(ls, nil) }
	switch op % 6 {
	case 0: // edit one byte
		out := bytes.Clone(data)
		out[(int(a)<<16|int(b))%len(out)] ^= c | 1
		return out
	case 1: // insert a copy of line i before line j
		out := append([][]byte{}, lines[:j]...)
		return join(append(append(out, lines[i]), lines[j:]...))
	case 2: // delete line i
		return join(append(append([][]byte{}, lines[:i]...), lines[i+1:]...))
	case 3: // swap lines i and j
		out := append([][]byte{}, lines...)
		out[i], out[j] = out[j], out[i]
		return join(out)
	case 4: // truncate at a byte offset
		return data[:(int(a)<<8|int(b))%len(data)]
	default: // cut whole lines off the end
		return join(lines[:i])
	}
}

// FuzzVerifyCatchesTampering checks that every non-forging tampering of a
// trail (editing bytes, inserting, deleting, swapping lines, truncating) is
// caught by verify with the checkpoint.
func FuzzVerifyCatchesTampering(f *testing.F) {
	for op := range uint8(6) {
		f.Add(op, uint16(3), uint16(7), byte(1))
		f.Add(op, uint16(30), uint16(0), byte(0x40))
	}
	f.Fuzz(func(t *testing.T, op uint8, a, b uint16, c byte) {
		loadFuzzTrail(t)
		out := tamper(fuzzTrail.data, op, a, b, c)
		if bytes.Equal(out, fuzzTrail.data) {
			return
		}
		dir := t.TempDir()
		path, ck := filepath.Join(dir, "trail.jsonl"), filepath.Join(dir, "trail.jsonl.checkpoint")
		if err := os.WriteFile(path, out, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(ck, fuzzTrail.checkpoint, 0o600); err != nil {
			t.Fatal(err)
		}
		rep, err := Verify([]string{path}, ck)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Problem == nil {
			t.Fatalf("tampering %d(%d,%d,%d) not caught", op%6, a, b, c)
		}
	})
}
