package ebpfmap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Two guards keep the map we write the one the pin names.
//
// A lock: two processes writing one pin would flip the map between their
// record sets every resync while both report ready. The bpffs holds only
// maps and directories, so the lock is a file in the run directory named
// after the pin, held with flock(2) for the life of the target; the kernel
// drops it when the process dies, so a crash leaves nothing stale.
//
// An identity check at every full read: a pin deleted by hand is pinned
// again, and a pin that now names another map (recreated by someone else)
// is adopted, so the engine's reconcile repairs it instead of writing to a
// map nobody can find. A pin is a file of its own on the bpffs, so while
// the pin is the file the last check passed on (same device and inode),
// it names the same map: one stat(2) instead of opening the pinned map and
// asking both maps for their IDs at every full read (docs/data-path.md §5).

// lockDir is where pin locks live: /run/pipeline for root, else a
// directory under the temporary directory.
func lockDir() string {
	if os.Geteuid() == 0 {
		return "/run/pipeline/locks"
	}
	return filepath.Join(os.TempDir(), "pipeline-locks")
}

// lockName turns a pin path into a file name.
func lockName(pin string) string {
	return strings.ReplaceAll(strings.TrimPrefix(filepath.Clean(pin), "/"), "/", "%") + ".lock"
}

// lockPin takes the pin's lock or says which process holds it.
func lockPin(pin string) (*os.File, error) {
	return lockFile(lockName(pin), "pin "+pin, func(holder, path string) error {
		return fmt.Errorf("another pipeline (pid %s) writes the map pinned at %s (lock %s): two writers would undo each other's changes; stop it or use another pin",
			holder, pin, path)
	})
}

// lockFile takes the lock file name in lockDir, writing our pid into it;
// held is the error when another process holds it; other failures name
// what is locked.
func lockFile(name, what string, held func(holder, path string) error) (*os.File, error) {
	dir := lockDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", what, err)
	}
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", what, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, held(strings.TrimSpace(string(holder)), path)
		}
		return nil, fmt.Errorf("lock %s: %w", what, err)
	}
	// A holder that stopped removed the file after we opened it: this lock
	// is on a file no one else can find, so take the lock again.
	if fi, err := f.Stat(); err == nil {
		if now, err := os.Stat(path); err != nil || !os.SameFile(fi, now) {
			f.Close()
			return lockFile(name, what, held)
		}
	}
	if err := f.Truncate(0); err == nil {
		fmt.Fprintf(f, "%d\n", os.Getpid())
	}
	return f, nil
}

// mapID is the kernel's ID of m.
func mapID(m *ebpf.Map) (ebpf.MapID, error) {
	info, err := m.Info()
	if err != nil {
		return 0, err
	}
	id, ok := info.ID()
	if !ok {
		return 0, errors.New("the kernel does not report map IDs")
	}
	return id, nil
}

// checkPin makes sure the pin still names t.m. It pins t.m again when the
// pin is gone, and adopts the map now pinned there when it matches the
// declaration (the next reconcile fills it).
func (t *Target) checkPin() error {
	if t.m == nil || t.plan {
		return nil
	}
	fi, err := os.Stat(t.s.pin)
	if err == nil && t.pinFile != nil && os.SameFile(fi, t.pinFile) {
		return nil
	}
	t.pinFile = nil
	same, err := t.checkPinnedMap()
	t.lost = err // writes go nowhere a reader finds until a check passes
	if same {
		// The file seen before the check named t.m when checked (a pin
		// replaced since is another file): later reads trust it.
		t.pinFile = fi
	}
	return err
}

// checkPinnedMap is checkPin's full check. It reports whether the pin
// named t.m already (same), with nothing to repair.
func (t *Target) checkPinnedMap() (same bool, err error) {
	pinned, err := ebpf.LoadPinnedMap(t.s.pin, nil)
	if errors.Is(err, os.ErrNotExist) {
		// Unpin forgets the old path (the file is gone already), so that
		// Pin writes it again instead of seeing it as pinned.
		if err := t.m.Unpin(); err != nil {
			return false, fmt.Errorf("pin %s was removed; pin again: %w", t.s.pin, err)
		}
		if err := os.MkdirAll(filepath.Dir(t.s.pin), 0o755); err != nil {
			return false, fmt.Errorf("pin %s was removed; pin again: %w", t.s.pin, explain(err))
		}
		if err := t.m.Pin(t.s.pin); err != nil {
			return false, fmt.Errorf("pin %s was removed; pin again: %w", t.s.pin, explain(err))
		}
		t.env.Logger.Warn("pin was removed; map pinned again", "file", t.s.pin)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check pin %s: %w", t.s.pin, explain(err))
	}
	have, err1 := mapID(t.m)
	now, err2 := mapID(pinned)
	if err := errors.Join(err1, err2); err != nil {
		pinned.Close()
		return false, fmt.Errorf("check pin %s: %w", t.s.pin, err)
	}
	if have == now {
		pinned.Close()
		return true, nil
	}
	if diff := t.s.mismatch(pinned); diff != "" {
		pinned.Close()
		return false, fmt.Errorf("pin %s now names another map that differs from the declaration (%s)", t.s.pin, diff)
	}
	if err := t.lockMap(pinned); err != nil {
		pinned.Close()
		return false, fmt.Errorf("pin %s now names another map: %w", t.s.pin, err)
	}
	t.m.Close()
	t.m, t.batch = pinned, true
	t.env.Logger.Warn("pin names another map; writing to it", "file", t.s.pin)
	return false, nil
}

// unlock removes the lock file and releases the lock (closing the
// descriptor releases the flock), so a clean exit leaves nothing under
// the lock directory. The file goes first, while the lock is held: a
// process that opened it meanwhile finds it gone once it has the lock, and
// takes a new one (lockPin).
func (t *Target) unlock() {
	if t.lock != nil {
		_ = os.Remove(t.lock.Name())
		t.lock.Close()
		t.lock = nil
	}
	if t.idLock != nil {
		_ = os.Remove(t.idLock.Name())
		t.idLock.Close()
		t.idLock = nil
	}
}

// lockMap takes the lock on m's map ID, in place of the one held on the
// map before: one map pinned at two paths is one map, and two pipelines,
// one per pin, would flip it every resync.
func (t *Target) lockMap(m *ebpf.Map) error {
	id, err := mapID(m)
	if err != nil {
		return fmt.Errorf("lock map %s: %w", t.s.pin, err)
	}
	f, err := lockFile(fmt.Sprintf("map-id-%d.lock", id), "map "+t.s.pin, func(holder, path string) error {
		return fmt.Errorf("another pipeline (pid %s) writes the map pinned at %s (map ID %d, maybe through another pin; lock %s): two writers would undo each other's changes; stop it or use another map",
			holder, t.s.pin, id, path)
	})
	if err != nil {
		return err
	}
	if t.idLock != nil {
		t.idLock.Close()
	}
	t.idLock = f
	return nil
}
