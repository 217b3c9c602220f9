package nats

import (
	"bytes"

	"github.com/pipeline/pipeline/engine/node"
)

// Describe implements node.Describer: a publisher has no state to read, so
// plan lists what the initial sync would publish.
func (t *Target) Describe() node.TargetInfo {
	kind := "publish"
	if t.s.jetstream {
		kind = "jetstream_publish"
	}
	return node.TargetInfo{Location: "one message per change, subject per record", Kind: kind, Exists: true}
}

// Show implements node.Describer: the subject and the message's JSON.
func (t *Target) Show(e node.Entry) string {
	subject, value, ok := bytes.Cut(e.Data, []byte{0})
	if !ok {
		return e.Value.AsString()
	}
	return string(subject) + " " + string(value)
}

var _ node.Describer = (*Target)(nil)
