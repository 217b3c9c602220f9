package template

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
)

// fileOwner is the uid and gid a written file gets; -1 keeps the writer's.
type fileOwner struct{ uid, gid int }

// resolveOwner looks owner and group up (names or numeric ids).
func resolveOwner(owner, group string) (fileOwner, error) {
	o := fileOwner{uid: -1, gid: -1}
	if owner != "" {
		id, err := strconv.Atoi(owner)
		if err != nil {
			u, lerr := user.Lookup(owner)
			if lerr != nil {
				return o, fmt.Errorf("owner %q: %w", owner, lerr)
			}
			id, _ = strconv.Atoi(u.Uid)
		}
		o.uid = id
	}
	if group != "" {
		id, err := strconv.Atoi(group)
		if err != nil {
			g, lerr := user.LookupGroup(group)
			if lerr != nil {
				return o, fmt.Errorf("group %q: %w", group, lerr)
			}
			id, _ = strconv.Atoi(g.Gid)
		}
		o.gid = id
	}
	return o, nil
}

// readCurrent reads the file at path: nil and no error when it does not
// exist, an error naming the directory when that is missing.
func readCurrent(path string) ([]byte, bool, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return b, true, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, err
	}
	if _, derr := os.Stat(filepath.Dir(path)); derr != nil {
		return nil, false, fmt.Errorf("directory of %s: %w", path, derr)
	}
	return nil, false, nil
}

// writeCandidate writes data to a new temporary file beside path, with
// mode and owner, synced to disk; the caller renames or removes it.
func writeCandidate(path string, data []byte, mode os.FileMode, own fileOwner) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("create candidate: %w", err)
	}
	tmp := f.Name()
	fail := func(err error) (string, error) {
		_ = f.Close()
		_ = os.Remove(tmp)
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		return fail(fmt.Errorf("write candidate %s: %w", tmp, err))
	}
	if err := f.Chmod(mode); err != nil {
		return fail(fmt.Errorf("chmod candidate %s: %w", tmp, err))
	}
	if own.uid >= 0 || own.gid >= 0 {
		if err := f.Chown(own.uid, own.gid); err != nil {
			return fail(fmt.Errorf("chown candidate %s: %w", tmp, err))
		}
	}
	if err := f.Sync(); err != nil {
		return fail(fmt.Errorf("fsync candidate %s: %w", tmp, err))
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("close candidate %s: %w", tmp, err)
	}
	return tmp, nil
}

// swap renames tmp over path and syncs the directory, so the new name
// survives a crash. With backup, the replaced bytes (old, when the file
// existed) are first written to path.bak the same way.
func swap(tmp, path string, backup bool, old []byte, existed bool, mode os.FileMode, own fileOwner) error {
	if backup && existed {
		bak, err := writeCandidate(path+".bak", old, mode, own)
		if err != nil {
			return fmt.Errorf("backup: %w", err)
		}
		if err := os.Rename(bak, path+".bak"); err != nil {
			_ = os.Remove(bak)
			return fmt.Errorf("backup: %w", err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("swap: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}
