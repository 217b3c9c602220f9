package nats

import (
	"context"

	"github.com/pipeline/pipeline/engine/node"
)

// Encoder implements node.Encoder: the target opened for plan, which
// connects nothing, for its Prepare (subject and message body).
func (s *Sink) Encoder(env node.Env) (func(node.Record) (node.Entry, error), error) {
	t, err := s.Open(context.Background(), env, node.ModePlan)
	if err != nil {
		return nil, err
	}
	return t.Prepare, nil
}

var _ node.Encoder = (*Sink)(nil)
