package ebpfmap

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// checkConstant encodes a from expression that reads no record (a constant
// such as from = 70000) at decode time, so that validate reports a value
// that cannot fit its encoding instead of every write failing at run time.
func checkConstant(enc *encoding, from hcl.Expression, ctx *hcl.EvalContext) hcl.Diagnostics {
	if enc == nil || from == nil {
		return nil
	}
	for _, tr := range from.Variables() {
		if tr.RootName() == "record" {
			return nil
		}
	}
	v, diags := from.Value(ctx)
	if diags.HasErrors() || !v.IsWhollyKnown() {
		return nil // reported by the attribute's own check
	}
	if err := enc.encode(v, make([]byte, enc.size)); err != nil {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Constant does not fit its encoding",
			Detail:  sentence(fmt.Sprintf("This constant cannot be encoded as %s: %s", enc.describe(), err)),
			Subject: from.Range().Ptr()}}
	}
	return nil
}
