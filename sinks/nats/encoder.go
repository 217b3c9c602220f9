package nats

import (
	"context"

	"github.com/pipeline/pipeline/engine/node"
)

// Encoder implements node.Encoder: the target opened for plan, which
// connects nothing, for its Prepare (subject and message body).
func (s *Sink) Encoder(env node.Env) (node.Preparer, error) {
	return s.Open(context.Background(), env, node.ModePlan)
}

var _ node.Encoder = (*Sink)(nil)
