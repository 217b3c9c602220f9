package inspect

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/pipeline/pipeline/cmd/pipeline/admin"
	"github.com/pipeline/pipeline/cmd/pipeline/view"
)

// TapOptions say what Tap asks for and how it prints.
type TapOptions struct {
	Against      string // the instance's admin address, or a URL
	JSON         bool   // print the server's JSON lines, not the readable form
	Rate, Sample int    // lines per second at most (0: no cap); every Nth delta
	Count        int    // stop after this many deltas; 0 runs until ctx ends
}

// Tap streams the deltas of nodes from the instance at f.Against to w.
func Tap(ctx context.Context, w io.Writer, nodes []string, f TapOptions) error {
	q := url.Values{"node": nodes, "rate": {strconv.Itoa(f.Rate)}, "sample": {strconv.Itoa(f.Sample)}}
	u, err := AdminURL(f.Against, "/tap", q)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("tap: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("tap: %w (is `pipeline run` serving on %s?)", err, f.Against)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("tap: %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	return PrintTap(ctx, w, resp.Body, f)
}

// PrintTap copies the stream to w until it ends, ctx ends or f.Count
// deltas were printed.
func PrintTap(ctx context.Context, w io.Writer, r io.Reader, f TapOptions) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	printed := 0
	for sc.Scan() {
		var l admin.TapLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return fmt.Errorf("tap: unreadable line from the server: %w", err)
		}
		if f.JSON {
			fmt.Fprintf(w, "%s\n", sc.Bytes())
		} else {
			fmt.Fprintln(w, view.Printable(ReadableTap(l)))
		}
		if l.Op != "skipped" {
			printed++
		}
		if f.Count > 0 && printed >= f.Count {
			return nil
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("tap: %w", err)
	}
	return nil
}

// ReadableTap is one line of the readable form:
// "15:04:05.000 sink.ebpf_map.allowed + 10.0.0.7/32 \"0100\"". A
// transform's upsert names the source the record came from, which for a
// fan-in says which input's data it is.
func ReadableTap(l admin.TapLine) string {
	ts := l.Time.Local().Format("15:04:05.000")
	switch l.Op {
	case "upsert":
		if o := l.Origin; o != nil && o.Source != "" && o.Source != l.Node {
			return fmt.Sprintf("%s %s + %s %s  (from %s)", ts, l.Node, l.Key, l.Value, o.Source)
		}
		return fmt.Sprintf("%s %s + %s %s", ts, l.Node, l.Key, l.Value)
	case "delete":
		return fmt.Sprintf("%s %s - %s", ts, l.Node, l.Key)
	}
	var parts []string
	if l.Dropped > 0 {
		parts = append(parts, fmt.Sprintf("%d dropped (this client fell behind)", l.Dropped))
	}
	if l.Limited > 0 {
		parts = append(parts, fmt.Sprintf("%d over --rate", l.Limited))
	}
	return fmt.Sprintf("%s skipped: %s", ts, strings.Join(parts, ", "))
}
