package audit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/pipeline/pipeline/internal/regfile"
)

// A trail's files are regular files: a path that names a device, a FIFO
// or a socket (or a symlink to one) would feed run and verify endless
// bytes (/dev/zero) or block them forever (a FIFO with no writer). Each
// file is opened without blocking and checked by its descriptor, so a
// file swapped between a check and the open is caught too. A line is at
// most maxLineBytes long.
const maxLineBytes = 16 << 20

// openRegular opens path (flag as os.OpenFile) and fails, naming the path
// and what it is, unless it is a regular file.
func openRegular(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, _, err := regfile.Open(path, flag, perm)
	if errors.Is(err, regfile.ErrNotRegular) {
		return nil, fmt.Errorf("%w: an audit trail's files must be regular files", err)
	}
	return f, err
}

func notRegular(path string, m fs.FileMode) error {
	return fmt.Errorf("%w: an audit trail's files must be regular files", regfile.NotRegular(path, m))
}

// errLineTooLong is returned for a line longer than maxLineBytes.
var errLineTooLong = fmt.Errorf("a line is longer than %d MiB", maxLineBytes>>20)

// readLine reads one line of r (without its newline) of at most
// maxLineBytes; io.EOF with the bytes read when the input ends first.
func readLine(r *bufio.Reader, long []byte) ([]byte, error) {
	long = long[:0]
	for {
		b, err := r.ReadSlice('\n')
		if len(long)+len(b) > maxLineBytes+1 {
			return nil, errLineTooLong
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, b...)
			continue
		}
		if len(long) > 0 {
			b = append(long, b...)
		}
		return b, err
	}
}

// readBounded reads a whole small file (a checkpoint) of at most limit
// bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := openRegular(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return b, nil
}

// lastLineStart is where in buf the line ending at end starts.
func lastLineStart(buf []byte, end int) int { return bytes.LastIndexByte(buf[:end], '\n') }
