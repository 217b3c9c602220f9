package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/ctyconv"
	"github.com/pipeline/pipeline/internal/redact"
)

// Explanation is the JSON of GET /explain?key=KEY, which `pipeline
// explain` prints. Values are masked: a sensitive value (a marked one, or
// one equal to a sensitive variable or attribute) shows as "(sensitive)".
type Explanation struct {
	Key     string  `json:"key"`
	Entries []Entry `json:"entries"`
	Seen    []Stage `json:"seen,omitempty"`
	Gates   []Gate  `json:"gates,omitempty"`
	Absent  bool    `json:"absent"`
}

// Entry is what one sink wants, wrote and read at the key.
type Entry struct {
	Sink      string `json:"sink"`
	InputKey  string `json:"input_key"`
	TargetKey string `json:"target_key"`
	Status    string `json:"status"`
	Wanted    bool   `json:"wanted"`
	Want      any    `json:"want,omitempty"`
	Written   bool   `json:"written"`         // the loop last wrote Wrote and the target answered ok
	Wrote     any    `json:"wrote,omitempty"` // what it last wrote
	InTarget  bool   `json:"in_target"`       // the target held an entry at the key when read
	Actual    any    `json:"actual,omitempty"`
	// ActualReadAt is when the target was read at the key (absent for an
	// append-only target, which cannot be read); ReadError why that read
	// failed.
	ActualReadAt *time.Time `json:"actual_read_at,omitempty"`
	ReadError    string     `json:"read_error,omitempty"`
	Attempts     int        `json:"attempts,omitempty"`
	LastError    string     `json:"last_error,omitempty"`
	LastErrorAt  *time.Time `json:"last_error_at,omitempty"`
	RetryAt      *time.Time `json:"retry_at,omitempty"`
	Origin       *Origin    `json:"origin,omitempty"`
	Path         []Stage    `json:"path,omitempty"`
	Input        string     `json:"input,omitempty"`        // fan-in: the input whose record the sink has
	OtherInputs  []string   `json:"other_inputs,omitempty"` // fan-in: other inputs holding the key
	Conflict     string     `json:"conflict,omitempty"`
	Brake        string     `json:"brake,omitempty"`    // why the deletion brake holds the key's delete
	Rejected     string     `json:"rejected,omitempty"` // the target rejected the last write for good: when it is written again
	Detail       []string   `json:"detail,omitempty"`
}

// Origin is where a record came from: its source and object or file:line.
type Origin struct {
	Source          string `json:"source"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name,omitempty"`
	UID             string `json:"uid,omitempty"`
	ResourceVersion string `json:"resource_version,omitempty"`
	Object          string `json:"object,omitempty"`
	File            string `json:"file,omitempty"`
	Line            int    `json:"line,omitempty"`
}

func viewOrigin(o *node.Origin, secrets *redact.Redactor) *Origin {
	return &Origin{Source: o.Source, Namespace: o.Namespace, Name: o.Name, UID: o.UID,
		ResourceVersion: o.ResourceVersion, Object: secrets.String(o.Object), File: o.File, Line: o.Line}
}

// Gate is a selector or condition on the way to a sink that decides which
// records reach it.
type Gate struct {
	Node string `json:"node"`
	Attr string `json:"attr"`
	Pos  string `json:"pos"`
	Text string `json:"text"`
}

// Stage is the key at one node of the graph.
type Stage struct {
	Node          string     `json:"node"`
	Key           string     `json:"key"`
	Present       bool       `json:"present"`
	Value         any        `json:"value,omitempty"`
	PendingDelete *time.Time `json:"pending_delete,omitempty"`
}

// explainHandler serves GET /explain?key=KEY.
func explainHandler(rt *engine.Runtime, secrets *redact.Redactor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "read-only: use GET", http.StatusMethodNotAllowed)
			return
		}
		key := r.URL.Query().Get("key")
		if err := engine.ValidateKey(key); err != nil {
			http.Error(w, err.Error()+": use /explain?key=KEY", http.StatusBadRequest)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		v := ViewExplanation(rt.Explain(ctx, key), secrets)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	})
}

// ViewExplanation is the JSON of ex, every secret masked.
func ViewExplanation(ex engine.Explanation, secrets *redact.Redactor) Explanation {
	v := Explanation{Key: secrets.String(ex.Key), Entries: []Entry{}, Absent: len(ex.Entries) == 0}
	for _, e := range ex.Entries {
		ev := Entry{Sink: e.Sink, InputKey: secrets.String(e.InputKey), TargetKey: secrets.String(e.TargetKey),
			Status: e.Status, Wanted: e.Wanted, Want: maskValue(e.Want, secrets), Written: e.Written, Wrote: maskValue(e.Wrote, secrets),
			InTarget: e.InTarget, Actual: maskValue(e.Actual, secrets), ActualReadAt: timePtr(e.ActualAt), ReadError: secrets.String(e.ReadError),
			Attempts: e.Attempts, LastError: secrets.String(e.LastError), LastErrorAt: timePtr(e.LastErrorAt),
			RetryAt: timePtr(e.RetryAt), Input: e.Input, OtherInputs: e.OtherInputs, Conflict: secrets.String(e.Conflict), Brake: e.Brake,
			Rejected: e.Rejected}
		for _, l := range e.Detail {
			ev.Detail = append(ev.Detail, secrets.String(l))
		}
		if o := e.Origin; o != nil {
			ev.Origin = viewOrigin(o, secrets)
		}
		for _, st := range e.Path {
			ev.Path = append(ev.Path, viewStage(st, secrets))
		}
		v.Entries = append(v.Entries, ev)
	}
	for _, st := range ex.Seen {
		v.Seen = append(v.Seen, viewStage(st, secrets))
	}
	for _, g := range ex.Gates {
		v.Gates = append(v.Gates, Gate{Node: g.Node, Attr: g.Attr, Pos: g.Pos, Text: secrets.String(g.Text)})
	}
	return v
}

func viewStage(st engine.Stage, secrets *redact.Redactor) Stage {
	return Stage{Node: st.Node, Key: secrets.String(st.Key), Present: st.Present,
		Value: maskValue(st.Value, secrets), PendingDelete: timePtr(st.PendingDelete)}
}

// maskValue turns a value into JSON data with sensitive parts masked.
func maskValue(v cty.Value, secrets *redact.Redactor) any {
	if v == cty.NilVal {
		return nil
	}
	if v.ContainsMarked() {
		return redact.Mask // a value derived from a sensitive one
	}
	return ctyconv.FromCty(secrets.Value(v))
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
