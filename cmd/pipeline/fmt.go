package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/spf13/cobra"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/schema"
)

// fmt behaves like terraform fmt: it rewrites files in canonical style and
// lists the ones it changed; with -check it writes nothing and exits 3 when
// any file is not formatted; -diff prints the changes; a syntax error exits 2.
func newFmtCmd() *cobra.Command {
	var check, diff, write, recursive bool
	cmd := &cobra.Command{
		Use:   "fmt [-check] [-diff] [-write=false] [PATH...]",
		Short: "Rewrite configuration files in the canonical format",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{"."}
			}
			if args[0] == "-" {
				return fmtStdin(cmd)
			}
			files, err := fmtFiles(args, recursive)
			if err != nil {
				return err
			}
			w := write && !check
			unformatted, syntax := 0, false
			for _, f := range files {
				changed, err := fmtFile(cmd, f, w, diff)
				var pe parseError
				switch {
				case errors.As(err, &pe):
					syntax = true
					view.WriteDiagsText(cmd.ErrOrStderr(), pe.files, pe.diags)
				case err != nil:
					return err
				case changed:
					unformatted++
				}
			}
			switch {
			case syntax:
				return exitError{2}
			case check && unformatted > 0:
				return exitError{3}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "check formatting only; exit 3 when a file needs formatting")
	cmd.Flags().BoolVar(&diff, "diff", false, "print the changes")
	cmd.Flags().BoolVar(&write, "write", true, "write the formatted files back")
	cmd.Flags().BoolVar(&recursive, "recursive", false, "also process sub-directories")
	return cmd
}

type parseError struct {
	files map[string]*hcl.File
	diags hcl.Diagnostics
}

func (p parseError) Error() string { return p.diags.Error() }

func fmtFiles(args []string, recursive bool) ([]string, error) {
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		err = filepath.WalkDir(a, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && p != a && !recursive {
				return filepath.SkipDir
			}
			if !d.IsDir() && filepath.Ext(p) == ".hcl" {
				out = append(out, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}

// format returns src in canonical form, or the syntax errors.
func format(name string, src []byte) ([]byte, error) {
	if diags := schema.CheckNesting(src, name); diags.HasErrors() {
		return nil, parseError{files: map[string]*hcl.File{name: {Bytes: src}}, diags: diags}
	}
	f, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, parseError{files: map[string]*hcl.File{name: f}, diags: diags}
	}
	return hclwrite.Format(src), nil
}

func fmtFile(cmd *cobra.Command, name string, write, diff bool) (bool, error) {
	src, err := os.ReadFile(name)
	if err != nil {
		return false, err
	}
	out, err := format(name, src)
	if err != nil || bytes.Equal(src, out) {
		return false, err
	}
	fmt.Fprintln(cmd.OutOrStdout(), view.Printable(name))
	if diff {
		d, err := unifiedDiff(name, src, out)
		if err != nil {
			return true, err
		}
		cmd.OutOrStdout().Write(d)
	}
	if write {
		st, err := os.Stat(name)
		if err != nil {
			return true, err
		}
		if err := os.WriteFile(name, out, st.Mode().Perm()); err != nil {
			return true, fmt.Errorf("write %s: %w", name, err)
		}
	}
	return true, nil
}

func fmtStdin(cmd *cobra.Command) error {
	src, err := io.ReadAll(cmd.InOrStdin())
	if err != nil {
		return err
	}
	out, err := format("<stdin>", src)
	var pe parseError
	if errors.As(err, &pe) {
		view.WriteDiagsText(cmd.ErrOrStderr(), pe.files, pe.diags)
		return exitError{2}
	}
	_, err = cmd.OutOrStdout().Write(out)
	return err
}

// unifiedDiff runs diff -u, as terraform fmt -diff does.
func unifiedDiff(name string, a, b []byte) ([]byte, error) {
	dir, err := os.MkdirTemp("", "pipeline-fmt")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	pa, pb := filepath.Join(dir, "old"), filepath.Join(dir, "new")
	if err := os.WriteFile(pa, a, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(pb, b, 0o600); err != nil {
		return nil, err
	}
	out, err := exec.Command("diff", "--label=old/"+name, "--label=new/"+name, "-u", pa, pb).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		err = nil // differences found
	}
	if err != nil {
		return nil, fmt.Errorf("run diff: %w", err)
	}
	return out, nil
}
