package admin

import (
	"encoding/json"
	"time"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/internal/redact"
)

// TapLine is one line of /tap and of `pipeline tap --json`: a delta, or a
// notice of events left out (dropped: the client fell behind; limited:
// over --rate; sampled out is not reported, it is what --sample asks).
type TapLine struct {
	Time  time.Time       `json:"time"`
	Node  string          `json:"node"`
	Op    string          `json:"op"` // upsert, delete, or skipped
	Key   string          `json:"key,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
	// CollectionGeneration is the node's collection generation after the
	// delta (it rises per batch); the config generation is /reloads'.
	CollectionGeneration uint64 `json:"collection_generation,omitempty"`
	// Origin is where an upserted record came from: its source (for a
	// fan-in, which input's data it is) and file:line or object.
	Origin  *Origin `json:"origin,omitempty"`
	Dropped uint64  `json:"dropped,omitempty"`
	Limited uint64  `json:"limited,omitempty"`
}

// NewTapLine renders ev with every secret masked: sensitive (marked)
// values become redact.Mask, and strings holding a secret are masked.
func NewTapLine(ev engine.TapEvent, secrets *redact.Redactor) TapLine {
	l := TapLine{Time: ev.Time.UTC(), Node: ev.Node, Op: "upsert", Key: secrets.String(ev.Key), CollectionGeneration: ev.CollectionGeneration}
	if ev.Delete {
		l.Op = "delete"
		return l
	}
	if o := ev.Origin; o != nil {
		l.Origin = viewOrigin(o, secrets)
	}
	b, err := json.Marshal(view.PlainValue(ev.Value, secrets))
	if err != nil {
		b = []byte(`null`)
	}
	l.Value = b
	return l
}
