package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Options say what the written file gets.
type Options struct {
	// Mode is the file's permission bits.
	Mode os.FileMode
	// UID and GID own the file; -1 keeps the writer's. The zero value
	// means root: set both.
	UID, GID int
	// NoSync skips both fsyncs (a file whose loss on a crash costs
	// nothing but work redone): the rename is still atomic for readers.
	NoSync bool
}

// Temp is a written, synced temporary file beside its destination, not
// yet renamed: a candidate a command may inspect before it is committed.
// Exactly one of Commit and Remove must follow.
type Temp struct {
	Name string // the temporary file's path
	path string
	sync bool
}

// Create writes data to a new temporary file in path's directory, with
// opt's mode and owner, synced to disk. On any failure the temporary file
// is removed and the error says which step failed.
func Create(path string, data []byte, opt Options) (*Temp, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("create temporary file: %w", err)
	}
	tmp := &Temp{Name: f.Name(), path: path, sync: !opt.NoSync}
	fail := func(step string, err error) (*Temp, error) {
		_ = f.Close()
		_ = os.Remove(tmp.Name)
		return nil, fmt.Errorf("%s %s: %w", step, tmp.Name, err)
	}
	if _, err := f.Write(data); err != nil {
		return fail("write", err)
	}
	if err := f.Chmod(opt.Mode); err != nil {
		return fail("chmod", err)
	}
	if opt.UID >= 0 || opt.GID >= 0 {
		if err := f.Chown(opt.UID, opt.GID); err != nil {
			return fail("chown", err)
		}
	}
	if tmp.sync {
		if err := f.Sync(); err != nil {
			return fail("fsync", err)
		}
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp.Name)
		return nil, fmt.Errorf("close %s: %w", tmp.Name, err)
	}
	return tmp, nil
}

// Commit renames the temporary file over its destination and syncs the
// directory, so the new name survives a crash. A failed rename removes
// the temporary file; a failed directory sync leaves the new file in
// place (its bytes are synced, its name may not be).
func (t *Temp) Commit() error {
	if err := os.Rename(t.Name, t.path); err != nil {
		_ = os.Remove(t.Name)
		return fmt.Errorf("rename: %w", err)
	}
	if !t.sync {
		return nil
	}
	return SyncDir(filepath.Dir(t.path))
}

// Remove discards the temporary file.
func (t *Temp) Remove() { _ = os.Remove(t.Name) }

// Write replaces path with data atomically: Create then Commit.
func Write(path string, data []byte, opt Options) error {
	t, err := Create(path, data, opt)
	if err != nil {
		return err
	}
	return t.Commit()
}

// SyncDir fsyncs directory dir, which makes a rename in it durable.
func SyncDir(dir string) error {
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
