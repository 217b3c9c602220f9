package files

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// CheckFiles reads the files now, as the first read of a run would, and
// reports what would fail or be skipped: a pattern that matches nothing
// (unless allow_empty), a file that cannot be read, a document or item
// that does not parse or is skipped. It serves `validate --check-files`;
// validate alone reads no file.
func (s *Source) CheckFiles() hcl.Diagnostics {
	var diags hcl.Diagnostics
	problem := func(sev hcl.DiagnosticSeverity, summary, detail string) {
		diags = append(diags, &hcl.Diagnostic{Severity: sev, Summary: summary, Detail: detail, Subject: s.pathsRange.Ptr()})
	}
	snap := s.read()
	if !s.allowEmpty {
		for _, i := range snap.unmatched {
			problem(hcl.DiagError, "No file matches", fmt.Sprintf("%s: no file matches %s. Create the files, fix the pattern, or set allow_empty = true if an empty match is expected.", s.address, s.patterns[i]))
		}
	}
	for _, e := range snap.readErr {
		problem(hcl.DiagError, "Cannot read file", fmt.Sprintf("%s: %v.", s.address, e.err))
	}
	_, _, skips := s.records(snap.files)
	for _, sk := range skips {
		problem(hcl.DiagWarning, "Skipped input", fmt.Sprintf("%s: %s is skipped (%s): %v.", s.address, sk.where, sk.reason, sk.err))
	}
	return diags
}
