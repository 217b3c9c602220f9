package nats

import "github.com/pipeline/pipeline/engine/node"

// Encoder implements node.Encoder: Prepare (subject and message body)
// without a connection, for `pipeline test`.
func (s *Sink) Encoder(env node.Env) (node.Preparer, error) {
	return &Target{s: s, env: env, plan: true, pending: map[string]pendingMsg{}}, nil
}

var _ node.Encoder = (*Sink)(nil)
