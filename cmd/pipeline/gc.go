package main

import (
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// shortLivedGCPercent is the GOGC of every command but run.
const shortLivedGCPercent = 400

// tuneGC makes the garbage collector run less often in the short-lived
// commands (validate, fmt, graph, schema...). Parsing allocates about 250
// bytes per byte of HCL, most of it HCL's token slice growing, and with the
// default GOGC=100 half of validate's time on a large configuration went to
// collecting it (BenchmarkValidate1000). cmd/compile tunes its collector
// the same way. run is long-lived and keeps the default; a GOGC set in the
// environment always wins.
func tuneGC(cmd *cobra.Command, _ []string) {
	if cmd.Name() == "run" || os.Getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(shortLivedGCPercent)
}
