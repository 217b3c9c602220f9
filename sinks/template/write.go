package template

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"

	"github.com/pipeline/pipeline/internal/atomicfile"
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

// backup keeps what path held (cur) as path.bak, never widening access:
// a regular file's copy gets its mode and owner (or, where pipeline may
// not give that owner, the owner's bits only and pipeline's ownership); a
// symbolic link is kept as a link to the same place, its target's content
// never copied. Both are written atomically (internal/atomicfile), and
// every failure removes its temporary file.
func backup(path string, cur onDisk) error {
	bak := path + ".bak"
	if cur.link != "" {
		tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf(".%s.%d.tmp", filepath.Base(bak), os.Getpid()))
		_ = os.Remove(tmp)
		if err := os.Symlink(cur.link, tmp); err != nil {
			return fmt.Errorf("backup: %w", err)
		}
		if err := os.Rename(tmp, bak); err != nil {
			_ = os.Remove(tmp)
			return fmt.Errorf("backup: %w", err)
		}
		return atomicfile.SyncDir(filepath.Dir(path))
	}
	err := atomicfile.Write(bak, cur.data, atomicfile.Options{Mode: cur.mode, UID: cur.uid, GID: cur.gid})
	if errors.Is(err, fs.ErrPermission) {
		err = atomicfile.Write(bak, cur.data, atomicfile.Options{Mode: cur.mode & 0o700, UID: -1, GID: -1})
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return nil
}
