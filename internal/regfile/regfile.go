// Package regfile opens and reads regular files only, without blocking
// and within a bound. Paths come from configurations, globs and pid files:
// a FIFO there would block a read forever (and the SIGTERM that should end
// it), and a device such as /dev/zero would stream without end. A file is
// opened with O_NONBLOCK and judged by its descriptor, so one swapped in
// after a Stat is caught too.
package regfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

var (
	// ErrNotRegular is wrapped by the error for a path that is a
	// directory, FIFO, device or socket (or a symbolic link to one).
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge is wrapped by the error for a file over the bound.
	ErrTooLarge = errors.New("file too large")
)

// Open opens path (flag and perm as os.OpenFile) and returns it with its
// FileInfo, or an error wrapping ErrNotRegular, without blocking, unless
// it is a regular file. A symbolic link is followed.
func Open(path string, flag int, perm os.FileMode) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK|syscall.O_NOCTTY, perm)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, NotRegular(path, fi.Mode())
	}
	return f, fi, nil
}

// Read reads the regular file at path, of at most limit bytes, into a
// buffer of its size (a reader that keeps many files' contents holds no
// spare capacity), and returns its FileInfo as opened. A longer file, or
// one that grows past limit while read, fails with ErrTooLarge (and its
// FileInfo, to say its size).
func Read(path string, limit int64) ([]byte, fs.FileInfo, error) {
	f, fi, err := Open(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if fi.Size() > limit {
		return nil, fi, tooLarge(path, limit)
	}
	data := make([]byte, fi.Size())
	n, err := io.ReadFull(f, data)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return data[:n], fi, nil // shrunk since the Stat
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	// Grown since the Stat: read on, one byte more than allowed to tell.
	rest, err := io.ReadAll(io.LimitReader(f, limit-fi.Size()+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(rest) == 0 {
		return data, fi, nil
	}
	if int64(len(data)+len(rest)) > limit {
		return nil, fi, tooLarge(path, limit)
	}
	return append(data, rest...), fi, nil
}

func tooLarge(path string, limit int64) error {
	return fmt.Errorf("%s holds more than the %d bytes allowed: %w", path, limit, ErrTooLarge)
}

// NotRegular is the error for path, of mode m, that is not a regular file:
// "PATH is not a regular file (a FIFO)", matching ErrNotRegular.
func NotRegular(path string, m fs.FileMode) error { return &notRegular{path, Kind(m)} }

type notRegular struct{ path, kind string }

func (e *notRegular) Error() string        { return e.path + " is not a regular file (" + e.kind + ")" }
func (e *notRegular) Is(target error) bool { return target == ErrNotRegular }

// Kind names what a file that is not regular is, for an error.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return "not a regular file"
}
