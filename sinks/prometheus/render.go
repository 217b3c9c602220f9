package prometheus

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/pipeline/pipeline/engine/node"
)

// Encoder implements node.Encoder: `pipeline test` holds this sink's
// entries as Prepare makes them, without serving anything.
func (s *Sink) Encoder(node.Env) (func(node.Record) (node.Entry, error), error) {
	return s.Prepare, nil
}

// Render implements node.Renderer: the sink's series in the text
// exposition format, exactly as a scrape of /metrics shows them (the
// node label included), for the entries given (sorted by key). As the
// target does, a series whose labels an earlier key serves is left out,
// and so is every series beyond max_series.
func (s *Sink) Render(entries []node.Entry) ([]byte, error) {
	st := newStore(s)
	for _, e := range slices.SortedFunc(slices.Values(entries), func(a, b node.Entry) int { return cmp.Compare(a.Key, b.Key) }) {
		sr, err := decode(e.Data, len(s.labels))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Key, err)
		}
		_ = st.put(e.Key, e.Value, sr, e.Data) // refused: not served
	}
	reg := promclient.NewRegistry()
	if err := promclient.WrapRegistererWith(promclient.Labels{"node": s.address}, reg).Register(st); err != nil {
		return nil, err
	}
	mfs, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

var (
	_ node.Encoder  = (*Sink)(nil)
	_ node.Renderer = (*Sink)(nil)
)
