package ebpfmap

import "github.com/pipeline/pipeline/engine/node"

// Encoder implements node.Encoder: Prepare of a target that opens no map,
// so `pipeline test` shows the bytes the map would hold without a bpffs.
func (s *Sink) Encoder(env node.Env) (func(node.Record) (node.Entry, error), error) {
	return s.newTarget(env, true).Prepare, nil
}

var _ node.Encoder = (*Sink)(nil)
