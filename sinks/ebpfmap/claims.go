package ebpfmap

import (
	"path/filepath"
	"strings"

	"github.com/pipeline/pipeline/engine/node"
)

// bpffsRoot is where a bpffs is mounted by convention.
const bpffsRoot = "/sys/fs/bpf"

func underBPFFS(pin string) bool {
	p := filepath.Clean(pin)
	return p == bpffsRoot || strings.HasPrefix(p, bpffsRoot+"/")
}

// Claims names the pin: two sinks on one pin are refused by validate.
func (s *Sink) Claims() []node.Claim {
	if s.pin == "" {
		return nil
	}
	return []node.Claim{{What: "pin", Name: filepath.Clean(s.pin), Range: s.pinRange}}
}
