package template

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/pipeline/pipeline/internal/regfile"
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
// to one) of at most limit bytes (regfile.Read: a FIFO or device fails at
// once, and no read runs unbounded). A missing file is no error (existed
// false), unless its directory is missing too.
func readRegular(path string, limit int64) (onDisk, error) {
	var d onDisk
	b, fi, err := regfile.Read(path, limit)
	if errors.Is(err, fs.ErrNotExist) {
		if _, derr := os.Stat(filepath.Dir(path)); derr != nil {
			return d, fmt.Errorf("directory of %s: %w", path, derr)
		}
		return d, nil
	}
	if err != nil {
		return d, err
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
