package view

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// WriteDiagsText renders diagnostics for people: severity and summary, the
// file:line:col, the source line with the range underlined, then the detail.
func WriteDiagsText(w io.Writer, files map[string]*hcl.File, diags hcl.Diagnostics) {
	for _, d := range SortDiags(diags) {
		sev := "Error"
		if d.Severity == hcl.DiagWarning {
			sev = "Warning"
		}
		fmt.Fprintf(w, "%s: %s\n", sev, Printable(d.Summary))
		if d.Subject != nil {
			r := *d.Subject
			fmt.Fprintf(w, "\n  on %s:%d:%d:\n", Printable(r.Filename), r.Start.Line, r.Start.Column)
			if line, ok := SourceLine(files, r); ok {
				line = Printable(line)
				prefix := fmt.Sprintf("  %4d: ", r.Start.Line)
				fmt.Fprintf(w, "%s%s\n", prefix, line)
				width := max(1, r.End.Column-r.Start.Column) // an empty range (a missing item) gets one caret
				if r.End.Line != r.Start.Line {
					width = max(1, len(line)-r.Start.Column+1)
				}
				fmt.Fprintf(w, "%s%s%s\n", strings.Repeat(" ", len(prefix)), strings.Repeat(" ", max(0, r.Start.Column-1)), strings.Repeat("^", width))
			}
		}
		if d.Detail != "" {
			fmt.Fprintf(w, "\n%s\n", Printable(d.Detail))
		}
		fmt.Fprintln(w)
	}
}

// SortDiags orders errors before warnings, then each by file and position
// (those without a position first).
func SortDiags(diags hcl.Diagnostics) hcl.Diagnostics {
	out := append(hcl.Diagnostics(nil), diags...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Severity != out[j].Severity {
			return out[i].Severity == hcl.DiagError
		}
		a, b := out[i].Subject, out[j].Subject
		switch {
		case a == nil || b == nil:
			return a == nil && b != nil
		case a.Filename != b.Filename:
			return a.Filename < b.Filename
		default:
			return a.Start.Byte < b.Start.Byte
		}
	})
	return out
}

// SourceLine is the text of the line r starts on, tabs as spaces.
func SourceLine(files map[string]*hcl.File, r hcl.Range) (string, bool) {
	f, ok := files[r.Filename]
	if !ok || f == nil {
		return "", false
	}
	sc := bufio.NewScanner(bytes.NewReader(f.Bytes))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if n == r.Start.Line {
			return strings.ReplaceAll(sc.Text(), "\t", " "), true
		}
	}
	return "", false
}

// Validate is the JSON view of diagnostics; it follows `terraform
// validate -json`.
type Validate struct {
	FormatVersion string     `json:"format_version"`
	Valid         bool       `json:"valid"`
	ErrorCount    int        `json:"error_count"`
	WarningCount  int        `json:"warning_count"`
	Diagnostics   []jsonDiag `json:"diagnostics"`
}

type jsonDiag struct {
	Severity string       `json:"severity"`
	Summary  string       `json:"summary"`
	Detail   string       `json:"detail,omitempty"`
	Range    *jsonRange   `json:"range,omitempty"`
	Snippet  *jsonSnippet `json:"snippet,omitempty"`
}

type jsonRange struct {
	Filename string  `json:"filename"`
	Start    jsonPos `json:"start"`
	End      jsonPos `json:"end"`
}

type jsonPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

type jsonSnippet struct {
	Context              *string `json:"context"`
	Code                 string  `json:"code"`
	StartLine            int     `json:"start_line"`
	HighlightStartOffset int     `json:"highlight_start_offset"`
	HighlightEndOffset   int     `json:"highlight_end_offset"`
	Values               []any   `json:"values"`
}

// ValidateJSON is the JSON view of diagnostics, as `terraform validate -json`.
func ValidateJSON(files map[string]*hcl.File, diags hcl.Diagnostics) Validate {
	out := Validate{FormatVersion: "1.0", Diagnostics: []jsonDiag{}}
	for _, d := range SortDiags(diags) {
		jd := jsonDiag{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			jd.Severity = "warning"
			out.WarningCount++
		} else {
			out.ErrorCount++
		}
		if r := d.Subject; r != nil {
			jd.Range = &jsonRange{Filename: r.Filename,
				Start: jsonPos{r.Start.Line, r.Start.Column, r.Start.Byte},
				End:   jsonPos{r.End.Line, r.End.Column, r.End.Byte}}
			if line, ok := SourceLine(files, *r); ok {
				end := r.End.Column - 1
				if r.End.Line != r.Start.Line || end > len(line) {
					end = len(line)
				}
				jd.Snippet = &jsonSnippet{Code: line, StartLine: r.Start.Line,
					HighlightStartOffset: min(r.Start.Column-1, len(line)), HighlightEndOffset: max(end, min(r.Start.Column-1, len(line))), Values: []any{}}
			}
		}
		out.Diagnostics = append(out.Diagnostics, jd)
	}
	out.Valid = out.ErrorCount == 0
	return out
}

// WriteJSON writes v as indented JSON.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
