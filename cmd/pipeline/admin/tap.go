package admin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/internal/redact"
)

// maxTaps bounds concurrent /tap streams so that they never take every
// admin slot (MaxRequests) from the metrics scraper.
const maxTaps = 4

// tapBuffer is how many events a tap holds for a slow client before it
// drops (and counts) the rest; the pipeline never waits for a tap.
const tapBuffer = 4096

// registerTap adds GET /tap?node=ADDR[&node=ADDR...][&rate=N][&sample=N]:
// a stream of JSON lines (TapLine), one per delta of the named nodes, until
// the client goes away. rate caps lines per second (default 100, 0 for no
// cap); sample=N keeps every Nth delta. Values are masked as in logs.
func registerTap(mux *http.ServeMux, rt *engine.Runtime, secrets *redact.Redactor) {
	slots := make(chan struct{}, maxTaps)
	mux.HandleFunc("GET /tap", func(w http.ResponseWriter, r *http.Request) {
		q, err := parseTapQuery(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		default:
			w.Header().Set("Retry-After", "5")
			http.Error(w, fmt.Sprintf("%d taps are open already", maxTaps), http.StatusServiceUnavailable)
			return
		}
		var taps []*engine.Tap
		defer func() {
			for _, t := range taps {
				t.Close()
			}
		}()
		for _, addr := range q.nodes {
			t, err := rt.Tap(addr, tapBuffer)
			if err != nil {
				http.Error(w, err.Error(), http.StatusNotFound)
				return
			}
			taps = append(taps, t)
		}
		streamTaps(w, r, taps, q, secrets)
	})
}

type tapQuery struct {
	nodes  []string
	rate   int // lines per second; 0: no cap
	sample int // keep every Nth delta
}

func parseTapQuery(r *http.Request) (tapQuery, error) {
	q := tapQuery{nodes: r.URL.Query()["node"], rate: 100, sample: 1}
	if len(q.nodes) == 0 {
		return q, fmt.Errorf("name a node to tap: /tap?node=KIND.TYPE.NAME")
	}
	for name, dst := range map[string]*int{"rate": &q.rate, "sample": &q.sample} {
		if s := r.URL.Query().Get(name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 || name == "sample" && n == 0 {
				return q, fmt.Errorf("%s=%q: give a whole number (rate >= 0, sample >= 1)", name, s)
			}
			*dst = n
		}
	}
	return q, nil
}

// streamTaps writes the taps' events until the client goes away. Rate and
// sampling apply across all nodes of the stream; events over the rate are
// counted and reported once a second as a "skipped" line, as are events a
// tap dropped because this client fell behind.
func streamTaps(w http.ResponseWriter, r *http.Request, taps []*engine.Tap, q tapQuery, secrets *redact.Redactor) {
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's WriteTimeout
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	enc := json.NewEncoder(w)
	events := mergeTaps(r.Context(), taps)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var seen, sent, limited uint64
	reported := make([]uint64, len(taps))
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			sent = 0
			if err := reportSkipped(enc, taps, reported, &limited); err != nil {
				return
			}
		case ev := <-events:
			seen++
			if (seen-1)%uint64(q.sample) != 0 {
				continue
			}
			if q.rate > 0 && sent >= uint64(q.rate) {
				limited++
				continue
			}
			sent++
			if err := enc.Encode(NewTapLine(ev, secrets)); err != nil {
				return
			}
		}
		if rc.Flush() != nil {
			return
		}
	}
}

// reportSkipped writes a line per tap that dropped events since the last
// report, and one for the events over the rate.
func reportSkipped(enc *json.Encoder, taps []*engine.Tap, reported []uint64, limited *uint64) error {
	now := time.Now().UTC()
	for i, t := range taps {
		if d := t.Dropped(); d > reported[i] {
			if err := enc.Encode(TapLine{Time: now, Op: "skipped", Dropped: d - reported[i]}); err != nil {
				return err
			}
			reported[i] = d
		}
	}
	if *limited > 0 {
		if err := enc.Encode(TapLine{Time: now, Op: "skipped", Limited: *limited}); err != nil {
			return err
		}
		*limited = 0
	}
	return nil
}
