package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
	auditsink "github.com/pipeline/pipeline/sinks/audit"
)

func newAuditCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Work with the trails of audit sinks",
	}
	cmd.AddCommand(newAuditVerifyCmd())
	return cmd
}

// verifyView is the JSON form of a verify run.
type verifyView struct {
	OK          bool         `json:"ok"`
	Files       []string     `json:"files"`
	Lines       uint64       `json:"lines"`
	FirstSeq    uint64       `json:"first_seq"`
	HeadSeq     uint64       `json:"head_seq"`
	Head        string       `json:"head,omitempty"`
	Checkpoint  string       `json:"checkpoint,omitempty"`
	LinesPerSec float64      `json:"lines_per_second"`
	Problem     *problemView `json:"problem,omitempty"`
}

type problemView struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

func newAuditVerifyCmd() *cobra.Command {
	var checkpoint string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify [--checkpoint FILE] PATH...",
		Short: "Check an audit trail's hash chain across rotated files and its checkpoint",
		Long: "verify reads the trail at each PATH (an active file brings its rotated files path.1, path.2, …) oldest first,\n" +
			"checks every line's hash chain, the retention lines that account for deleted files, and that the trail\n" +
			"reaches the checkpoint (by default PATH.checkpoint when it exists). It names the first broken line as\n" +
			"file:line and the kind: edited, inserted, removed, reordered or truncated. Exit status 0 when intact, 1 otherwise.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := auditsink.TrailFiles(args)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("checkpoint") {
				checkpoint = defaultCheckpoint(args)
			}
			rep, err := auditsink.Verify(files, checkpoint)
			if err != nil {
				return err
			}
			v := newVerifyView(rep, checkpoint)
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(v); err != nil {
					return err
				}
			} else {
				printVerify(out, v)
			}
			if !v.OK {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&checkpoint, "checkpoint", "", "checkpoint file to check the trail's head against (default: PATH.checkpoint when present; \"\" for none)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// defaultCheckpoint is the checkpoint beside the first active file given.
func defaultCheckpoint(paths []string) string {
	for _, p := range paths {
		if strings.HasSuffix(filepath.Base(p), ".checkpoint") {
			continue
		}
		if _, err := os.Stat(p + ".checkpoint"); err == nil {
			return p + ".checkpoint"
		}
	}
	return ""
}

func newVerifyView(rep auditsink.Report, checkpoint string) verifyView {
	v := verifyView{OK: rep.Problem == nil, Files: rep.Files, Lines: rep.Lines, FirstSeq: rep.FirstSeq,
		HeadSeq: rep.HeadSeq, Head: rep.Head, Checkpoint: checkpoint}
	if s := rep.Elapsed.Seconds(); s > 0 {
		v.LinesPerSec = float64(rep.Lines) / s
	}
	if p := rep.Problem; p != nil {
		v.Problem = &problemView{p.File, p.Line, string(p.Kind), p.Detail}
	}
	return v
}

func printVerify(out io.Writer, v verifyView) {
	out = view.PrintableWriter{W: out} // a broken trail's detail quotes its text
	if v.Problem != nil {
		fmt.Fprintf(out, "%s:%d: %s: %s\n", v.Problem.File, v.Problem.Line, v.Problem.Kind, v.Problem.Detail)
		fmt.Fprintf(out, "trail broken: %d lines verified before it (%.0f lines/s)\n", v.Lines, v.LinesPerSec)
		return
	}
	ck := "no checkpoint"
	if v.Checkpoint != "" {
		ck = "checkpoint " + v.Checkpoint + " reached"
	}
	fmt.Fprintf(out, "trail intact: %s, seq %d to %d, in %s; %s (%.0f lines/s)\n",
		view.Plural(int(v.Lines), "line"), v.FirstSeq, v.HeadSeq, view.Plural(len(v.Files), "file"), ck, v.LinesPerSec)
}
