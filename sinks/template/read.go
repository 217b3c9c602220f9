package template

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// onDisk is what a path held when read: its bytes and, for a backup, the
// mode and owner of the file, or the target of the symbolic link it was.
type onDisk struct {
	data     []byte
	existed  bool
	mode     os.FileMode
	uid, gid int
	link     string // the path's link target when it is a symbolic link
}

// readRegular reads the regular file at path (a symbolic link is followed
// to one) of at most limit bytes. Anything else fails without blocking: a
// FIFO is opened non-blocking and refused by its type, a device such as
// /dev/zero likewise, and a file longer than limit is refused from its
// size, so no read runs unbounded. A missing file is no error (existed
// false), unless its directory is missing too.
func readRegular(path string, limit int64) (onDisk, error) {
	var d onDisk
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if _, derr := os.Stat(filepath.Dir(path)); derr != nil {
			return d, fmt.Errorf("directory of %s: %w", path, derr)
		}
		return d, nil
	}
	if err != nil {
		return d, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return d, err
	}
	if !fi.Mode().IsRegular() {
		return d, fmt.Errorf("%s is not a regular file (%s)", path, fileType(fi.Mode()))
	}
	if fi.Size() > limit {
		return d, fmt.Errorf("%s holds %d bytes, more than the %d allowed", path, fi.Size(), limit)
	}
	// The size may grow while we read: read one byte more than allowed
	// to tell.
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return d, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return d, fmt.Errorf("%s holds more than the %d bytes allowed", path, limit)
	}
	d.data, d.existed, d.mode, d.uid, d.gid = b, true, fi.Mode().Perm(), -1, -1
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		d.uid, d.gid = int(st.Uid), int(st.Gid)
	}
	if li, err := os.Lstat(path); err == nil && li.Mode()&fs.ModeSymlink != 0 {
		if d.link, err = os.Readlink(path); err != nil {
			return d, fmt.Errorf("read link %s: %w", path, err)
		}
	}
	return d, nil
}

// fileType names a file's type for an error.
func fileType(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}

// templateFileLimit bounds a template_file: a template is configuration,
// read whole at every validate.
const templateFileLimit = 16 << 20

func readTemplateFile(path string) ([]byte, error) {
	d, err := readRegular(path, templateFileLimit)
	if err == nil && !d.existed {
		err = fmt.Errorf("open %s: %w", path, fs.ErrNotExist)
	}
	return d.data, err
}
