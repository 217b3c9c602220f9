package ebpfmap

import (
	"github.com/cilium/ebpf"

	"github.com/pipeline/pipeline/engine/node"
)

// Encoder implements node.Encoder: Prepare of a target that opens no map,
// so `pipeline test` shows the bytes the map would hold without a bpffs.
func (s *Sink) Encoder(env node.Env) (node.Preparer, error) {
	return &Target{s: s, env: env, plan: true, ncpu: 1, zero: make([]byte, s.spec.ValueSize),
		isArr: s.spec.Type == ebpf.Array || s.spec.Type == ebpf.PerCPUArray}, nil
}

var _ node.Encoder = (*Sink)(nil)
