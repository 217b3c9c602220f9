package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pipeline/pipeline/cmd/pipeline/admin"
	"github.com/pipeline/pipeline/cmd/pipeline/view"
)

// FetchExplain asks the admin endpoint at base about key.
func FetchExplain(ctx context.Context, base, key string) ([]byte, error) {
	target, err := AdminURL(base, "/explain", url.Values{"key": {key}})
	if err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	u, _ := url.Parse(target) // AdminURL made it
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("explain: ask %s: %w (is `pipeline run --listen %s` running? --against names its admin address)", u.Host, err, u.Host)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("explain: read answer from %s: %w", u.Host, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("explain: %s answered %s: %s", u.Host, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// WriteExplain renders an answer for people.
func WriteExplain(w io.Writer, v admin.Explanation, now time.Time) {
	w = view.PrintableWriter{W: w}
	if v.Absent {
		writeAbsent(w, v)
		return
	}
	for i, e := range v.Entries {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s  %s  %s\n", e.Sink, e.TargetKey, e.Status)
		if o := e.Origin; o != nil {
			fmt.Fprintf(w, "  origin   %s\n", originText(o))
		}
		if e.Input != "" {
			fmt.Fprintf(w, "  input    %s", e.Input)
			if len(e.OtherInputs) > 0 {
				fmt.Fprintf(w, "  (also held by %s)", strings.Join(e.OtherInputs, ", "))
			}
			fmt.Fprintln(w)
		}
		for _, st := range e.Path {
			fmt.Fprintf(w, "  stage    %s  %s = %s", st.Node, st.Key, stageValue(st))
			if st.PendingDelete != nil {
				fmt.Fprintf(w, "  (deletion pending, due %s, in %s)", st.PendingDelete.UTC().Format(time.RFC3339), st.PendingDelete.Sub(now).Round(time.Second))
			}
			fmt.Fprintln(w)
		}
		writeEntryTruth(w, e)
		if e.Attempts > 0 {
			fmt.Fprintf(w, "  error    %s (attempts %d)\n", e.LastError, e.Attempts)
		}
		if e.Rejected != "" {
			fmt.Fprintf(w, "  rejected %s\n", e.Rejected)
		}
		if e.Conflict != "" {
			fmt.Fprintf(w, "  conflict %s\n", e.Conflict)
		}
		if e.Brake != "" {
			fmt.Fprintf(w, "  brake    %s\n", e.Brake)
		}
		for _, d := range e.Detail {
			fmt.Fprintf(w, "  target   %s\n", d)
		}
	}
}

// writeEntryTruth writes what the sink wants at the key, what it last
// wrote there, and what the target held there when read, with the time
// of that read.
func writeEntryTruth(w io.Writer, e admin.Entry) {
	fmt.Fprintf(w, "  want     %s\n", jsonText(e.Want, e.Wanted))
	if e.Written {
		fmt.Fprintf(w, "  wrote    %s\n", jsonText(e.Wrote, true))
	}
	switch {
	case e.ReadError != "":
		fmt.Fprintf(w, "  actual   unknown: %s\n", e.ReadError)
	case e.ActualReadAt == nil:
		fmt.Fprintln(w, "  actual   not readable (an append-only target)")
	default:
		fmt.Fprintf(w, "  actual   %s  read at %s\n", jsonText(e.Actual, e.InTarget), e.ActualReadAt.UTC().Format(time.RFC3339))
	}
}

func writeAbsent(w io.Writer, v admin.Explanation) {
	fmt.Fprintf(w, "%s is in no sink.\n", v.Key)
	if len(v.Seen) > 0 {
		fmt.Fprintln(w, "It is held by:")
		for _, st := range v.Seen {
			fmt.Fprintf(w, "  %s = %s\n", st.Node, stageValue(st))
		}
		fmt.Fprintf(w, "No stage after %s holds it: a setting below drops it there, or gives it another key.\n", v.Seen[len(v.Seen)-1].Node)
	}
	if len(v.Gates) > 0 {
		fmt.Fprintln(w, "What decides which records reach the sinks:")
		for _, g := range v.Gates {
			fmt.Fprintf(w, "  %s  %s = %s  (%s)\n", g.Node, g.Attr, g.Text, g.Pos)
		}
	}
}

func originText(o *admin.Origin) string {
	var b strings.Builder
	b.WriteString(o.Source)
	if o.Name != "" {
		fmt.Fprintf(&b, "  object %s", o.Name)
		if o.Namespace != "" {
			b.Reset()
			fmt.Fprintf(&b, "%s  object %s/%s", o.Source, o.Namespace, o.Name)
		}
	}
	if o.UID != "" {
		fmt.Fprintf(&b, " uid %s", o.UID)
	}
	if o.ResourceVersion != "" {
		fmt.Fprintf(&b, " resourceVersion %s", o.ResourceVersion)
	}
	if o.File != "" {
		fmt.Fprintf(&b, "  %s", o.File)
		if o.Line > 0 {
			fmt.Fprintf(&b, ":%d", o.Line)
		}
	}
	return b.String()
}

func stageValue(st admin.Stage) string {
	if !st.Present {
		return "(absent)"
	}
	return jsonText(st.Value, true)
}

func jsonText(v any, ok bool) string {
	if !ok {
		return "(none)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
