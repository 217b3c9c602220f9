package ebpfmap

import (
	"path/filepath"
	"strings"

	"github.com/pipeline/pipeline/engine/node"
)

// bpffs is where the BPF filesystem is mounted on a Kubernetes node.
const bpffs = "/sys/fs/bpf"

// HostNeeds is what the sink needs of the host: CAP_BPF to create, pin, read and
// write maps (no program is loaded or attached, so neither NET_ADMIN nor
// PERFMON), and the bpffs holding the pin.
func (s *Sink) HostNeeds() node.HostNeeds {
	dir := bpffs
	if p := filepath.Clean(s.pin); p != bpffs && !strings.HasPrefix(p, bpffs+"/") {
		dir = filepath.Dir(p) // a bpffs mounted elsewhere
	}
	return node.HostNeeds{Capabilities: []string{"BPF"}, Paths: []string{dir}}
}

// Needs implements node.Access (HostNeeds).
func (s *Sink) Needs() node.Needs { return node.Needs{Host: s.HostNeeds()} }

var _ node.Access = (*Sink)(nil)
