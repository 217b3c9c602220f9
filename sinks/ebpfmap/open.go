package ebpfmap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

const bpfFSMagic = 0xcafe4a11

// checkBPFFS explains what is missing when dir is not on a bpffs.
func checkBPFFS(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		var st unix.Statfs_t
		if err := unix.Statfs(d, &st); err == nil {
			if st.Type == bpfFSMagic {
				return nil
			}
			return fmt.Errorf("%s is not on a bpf filesystem: mount one with `mount -t bpf bpf /sys/fs/bpf` (as root)", dir)
		}
		if filepath.Dir(d) == d {
			return fmt.Errorf("%s: no such directory", dir)
		}
	}
}

// explain turns permission errors into what to do.
func explain(err error) error {
	if !errors.Is(err, unix.EPERM) && !errors.Is(err, os.ErrPermission) {
		return err
	}
	if os.Geteuid() == 0 {
		return fmt.Errorf("%w: refused although running as root (which has CAP_BPF): the map may be read-only, or an LSM or kernel lockdown forbids it", err)
	}
	return fmt.Errorf("%w: creating and writing BPF maps needs root or CAP_BPF (kernel.unprivileged_bpf_disabled forbids it to others)", err)
}

// openMap opens the pinned map, creating it when absent (not in plan mode)
// and checking that an existing one matches the spec. replaced names the
// differences of a pinned map that on_mismatch = "recreate" replaces (run)
// or would replace (plan: the map is then nil, as for one run creates).
func (s *Sink) openMap(plan bool) (m *ebpf.Map, replaced string, err error) {
	dir := filepath.Dir(s.pin)
	if plan {
		if _, err := os.Stat(s.pin); errors.Is(err, os.ErrNotExist) {
			return nil, "", nil // nothing to plan against: run would create the map
		}
	} else {
		if err := checkBPFFS(dir); err != nil {
			return nil, "", err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, "", fmt.Errorf("create %s: %w", dir, explain(err))
		}
	}
	if st, err := os.Stat(s.pin); err == nil && st.IsDir() {
		return nil, "", fmt.Errorf("pin %s is a directory: name a map inside it, such as %s", s.pin, filepath.Join(s.pin, "allowed"))
	}
	m, err = ebpf.LoadPinnedMap(s.pin, &ebpf.LoadPinOptions{ReadOnly: plan})
	switch {
	case errors.Is(err, os.ErrNotExist) && plan:
		return nil, "", nil
	case errors.Is(err, os.ErrNotExist):
		m, err = s.create()
		return m, "", err
	case err != nil:
		return nil, "", fmt.Errorf("open pinned map %s: %w", s.pin, explain(err))
	}
	if diff := s.mismatch(m); diff != "" {
		m.Close()
		switch {
		case s.recreate && plan:
			return nil, diff, nil
		case !s.recreate:
			return nil, "", fmt.Errorf("pinned map %s differs from the declaration (%s); fix the declaration, remove the pin, or set on_mismatch = \"recreate\"", s.pin, diff)
		}
		if err := os.Remove(s.pin); err != nil {
			return nil, "", fmt.Errorf("remove mismatched pin %s: %w", s.pin, explain(err))
		}
		m, err = s.create()
		return m, diff, err
	}
	return m, "", nil
}

func (s *Sink) create() (*ebpf.Map, error) {
	m, err := ebpf.NewMap(s.spec)
	if err != nil {
		return nil, fmt.Errorf("create map %s: %w", s.pin, explain(err))
	}
	if err := m.Pin(s.pin); err != nil {
		m.Close()
		return nil, fmt.Errorf("pin map at %s: %w", s.pin, explain(err))
	}
	return m, nil
}

// mismatch names every difference between the pinned map and the spec.
func (s *Sink) mismatch(m *ebpf.Map) string {
	var diffs []string
	check := func(what string, have, want any) {
		if have != want {
			diffs = append(diffs, fmt.Sprintf("%s is %v, declared %v", what, have, want))
		}
	}
	check("type", m.Type(), s.spec.Type)
	check("key size", m.KeySize(), s.spec.KeySize)
	check("value size", m.ValueSize(), s.spec.ValueSize)
	check("max_entries", m.MaxEntries(), s.spec.MaxEntries)
	check("flags", m.Flags(), s.spec.Flags)
	out := ""
	for i, d := range diffs {
		if i > 0 {
			out += "; "
		}
		out += d
	}
	return out
}
