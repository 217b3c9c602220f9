package natskv

import "github.com/pipeline/pipeline/engine/node"

// Encoder implements node.Encoder: Prepare (escaped key and encoded value)
// without a connection, for `pipeline test`.
func (s *Sink) Encoder(env node.Env) (func(node.Record) (node.Entry, error), error) {
	return (&Target{s: s, env: env, plan: true}).Prepare, nil
}

var _ node.Encoder = (*Sink)(nil)
