package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// A Row is one line of the table: a scenario's measurement over the runs,
// and its reference (floor, peer or goal) measured in the same run.
type Row struct {
	ID       string    `json:"id"`   // "P1c"
	Name     string    `json:"name"` // what is measured
	Unit     string    `json:"unit"` // "ms", "MB", "updates/s"
	Samples  []float64 `json:"samples,omitempty"`
	Median   float64   `json:"median,omitempty"`
	Min      float64   `json:"min,omitempty"`
	Max      float64   `json:"max,omitempty"`
	Ref      string    `json:"ref,omitempty"`       // the row or goal the ratio divides by
	RefValue float64   `json:"ref_value,omitempty"` // its median
	Ratio    float64   `json:"ratio,omitempty"`     // Median / RefValue
	Goal     string    `json:"goal,omitempty"`      // the target, in words ("<= 1.25x")
	Note     string    `json:"note,omitempty"`
	Skipped  string    `json:"skipped,omitempty"` // why the row was not measured
}

// measured returns a row with the statistics of samples.
func measured(id, name, unit string, samples []float64) Row {
	r := Row{ID: id, Name: name, Unit: unit, Samples: samples}
	if len(samples) == 0 {
		r.Skipped = "no samples"
		return r
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	r.Min, r.Max = s[0], s[len(s)-1]
	if n := len(s); n%2 == 1 {
		r.Median = s[n/2]
	} else {
		r.Median = (s[n/2-1] + s[n/2]) / 2
	}
	return r
}

// against sets the ratio of r to ref (another measured row).
func (r Row) against(ref Row, goal string) Row {
	r.Ref, r.RefValue, r.Goal = ref.ID, ref.Median, goal
	if ref.Median != 0 && ref.Skipped == "" && r.Skipped == "" {
		r.Ratio = r.Median / ref.Median
	}
	return r
}

// skipped is a row that was not measured, with the reason.
func skipped(id, name, why string) Row { return Row{ID: id, Name: name, Skipped: why} }

// durations converts durations to milliseconds.
func millis(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d.Microseconds()) / 1000
	}
	return out
}

// Print writes the table for a terminal or a Markdown file.
func Print(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, " row\t scenario\t median\t min..max\t n\t vs\t ratio\t goal\t note")
	for _, r := range rows {
		if r.Skipped != "" {
			fmt.Fprintf(tw, " %s\t %s\t -\t -\t -\t -\t -\t %s\t %s\n", r.ID, r.Name, r.Goal, r.Skipped)
			continue
		}
		ratio, ref := "", r.Ref
		if r.Ratio != 0 {
			ratio = fmt.Sprintf("%.2fx", r.Ratio)
		}
		fmt.Fprintf(tw, " %s\t %s\t %s %s\t %s..%s\t %d\t %s\t %s\t %s\t %s\n", r.ID, r.Name, num(r.Median), r.Unit,
			num(r.Min), num(r.Max), len(r.Samples), ref, ratio, r.Goal, r.Note)
	}
	_ = tw.Flush()
}

// Markdown writes the table as a Markdown table.
func Markdown(w io.Writer, rows []Row) {
	fmt.Fprintln(w, "| row | scenario | median | min..max | n | vs | ratio | goal | note |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		if r.Skipped != "" {
			fmt.Fprintf(w, "| %s | %s | - | - | - | - | - | %s | %s |\n", r.ID, r.Name, r.Goal, r.Skipped)
			continue
		}
		ratio := ""
		if r.Ratio != 0 {
			ratio = fmt.Sprintf("%.2fx", r.Ratio)
		}
		fmt.Fprintf(w, "| %s | %s | %s %s | %s..%s | %d | %s | %s | %s | %s |\n", r.ID, r.Name, num(r.Median), r.Unit,
			num(r.Min), num(r.Max), len(r.Samples), r.Ref, ratio, r.Goal, r.Note)
	}
}

func num(f float64) string {
	switch a := math.Abs(f); {
	case a >= 1000:
		return fmt.Sprintf("%.0f", f)
	case a >= 10:
		return fmt.Sprintf("%.1f", f)
	default:
		return fmt.Sprintf("%.2f", f)
	}
}

// Results is what bench/results.json holds.
type Results struct {
	Date    time.Time `json:"date"`
	Machine Machine   `json:"machine"`
	Options Options   `json:"options"`
	Rows    []Row     `json:"rows"`
}

// WriteJSON writes the results to path.
func WriteJSON(path string, res Results) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ReadJSON reads results written by WriteJSON.
func ReadJSON(path string) (Results, error) {
	var res Results
	b, err := os.ReadFile(path)
	if err != nil {
		return res, err
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return res, fmt.Errorf("read %s: %w", path, err)
	}
	return res, nil
}

// Machine describes where the table was measured.
type Machine struct {
	CPUs   int    `json:"cpus"`
	Memory string `json:"memory"`
	Kernel string `json:"kernel"`
	Go     string `json:"go"`
}

func (m Machine) String() string {
	return fmt.Sprintf("%d CPUs, %s memory, Linux %s, %s", m.CPUs, m.Memory, m.Kernel, m.Go)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(s)
}
