package template

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/haproxy"
	"github.com/pipeline/pipeline/schema"
)

// Attributes of sink "template".
var (
	templateAttr = schema.Expr("template", "records").
			Doc("The template, inline: HCL template syntax as Terraform's templatefile() (`${...}` interpolations, `%{ for r in records }...%{ endfor }`, `%{ if }`, every function of the language). In scope: `records`, the input's records as a list of `{ key, value }` objects sorted by key, and `var`, `local`. Give `template` or `template_file`.").
			Example(`"%{ for r in records }server ${r.key} ${r.value.ip}:${r.value.port}\n%{ endfor }"`)
	templateFileAttr = schema.String("template_file").Default("", `""`).
				Doc("The template, from a file (relative to the configuration's directory): the same syntax and scope as `template`. Errors point at the template file's line and column.").Example(`"haproxy.cfg.tmpl"`)
	pathAttr = schema.String("path").Required().
			Doc("The file to render. It is written atomically (a temporary file in the same directory, fsync, rename, fsync of the directory) and only when its bytes change. The directory must exist.").Example(`"/etc/haproxy/haproxy.cfg"`)
	modeAttr = schema.String("mode").Default("0644", `"0644"`).
			Doc("Permission bits of the file, in octal.")
	ownerAttr = schema.String("owner").Default("", `""`).
			Doc("Owner of the file, a user name or a numeric id; empty keeps the writer's.")
	groupAttr = schema.String("group").Default("", `""`).
			Doc("Group of the file, a group name or a numeric id; empty keeps the writer's.")
	backupAttr = schema.Bool("backup").Default(false, "false").
			Doc("Keep the file replaced by each write as PATH.bak, with the replaced file's mode and owner. When PATH is a symbolic link, PATH.bak is a link to the same place, never a copy of what it points at.")
	maxSizeAttr = schema.Size("max_size").Default(64<<20, `"64MiB"`).
			Doc("Largest render written. A render that grows past it stops at once and is refused like a failed check: the file is kept, and the entries are reported as failing. The values a render builds on the way (what its functions return, the elements its for expressions build) may total twice max_size, checked before each is built, and a render over that is refused the same way. It also bounds how much of the file on disk is read.")
	checkAttr = schema.StringList("check_command").Default(nil, "[]").
			Doc("Command run on each candidate before the swap: a list (argv, no shell) in which `{{path}}` stands for the candidate's path. A non-zero exit, or no exit within check_timeout, keeps the current file, and every entry the candidate would have changed is reported as failing with the reason (log, /readyz degraded, `explain`); pipeline_sink_template_checks_total{result=\"failed\"} counts it. The command's output is shown only as show_command_output says. The same candidate is not checked again: the next change is.").
			Example(`["haproxy", "-c", "-f", "{{path}}"]`)
	checkTimeoutAttr = schema.Duration("check_timeout").Default(30*time.Second, `"30s"`).
				Doc("How long check_command may run; a check that times out fails.")
	showOutputAttr = schema.Bool("show_command_output").Default(false, "false").
			Doc("Show the output of check_command and reload_command (its first 4 KiB, each sensitive value's exact text masked) even when the rendered file holds a sensitive value. Off, the output of a command run on such a file is withheld and only its exit status is shown: a command may print the file in a form the masking does not recognise (reversed, encoded). The output of a command run on a file without sensitive values is always shown.")
	reloadAttr = schema.StringList("reload_command").Default(nil, "[]").
			Doc("Command run after each swap (argv, no shell; `{{path}}` is the file's path). A failure is logged, shown degraded and retried with backoff (1s to 5m) until it succeeds or the file changes again.").
			Example(`["systemctl", "reload", "haproxy"]`)
	signalAttr = schema.String("reload_signal").Default("", `""`).
			Doc("Signal sent to the process whose id is in pid_file after each swap, instead of reload_command: `SIGHUP`, `SIGUSR1`, `SIGUSR2`. HAProxy in master-worker mode (`-W`) reloads on SIGUSR2 without dropping established connections.").Example(`"SIGUSR2"`)
	pidFileAttr = schema.String("pid_file").Default("", `""`).
			Doc("File holding the process id reload_signal goes to (its first line), read at every reload. It must be a regular file of at most 4 KiB holding a live process id from 2 to the kernel's pid_max that is not pipeline's own, whose program is pid_program; anything else fails the reload (retried with backoff) and signals nothing.").Example(`"/run/haproxy.pid"`)
	pidProgramAttr = schema.String("pid_program").Default("", `""`).
			Doc("Program the process in pid_file must be running (the base name of /proc/PID/exe, or its name in /proc/PID/comm) for reload_signal to be sent: a stale pid file whose id now belongs to another process signals nothing. Empty: the program of check_command (its first element's base name), or \"haproxy\" without check_command.").Example(`"haproxy"`)
	reloadTimeoutAttr = schema.Duration("reload_timeout").Default(30*time.Second, `"30s"`).
				Doc("How long reload_command may run.")
	reloadGapAttr = schema.Duration("reload_interval").Default(time.Second, `"1s"`).
			Doc("Least time between two reloads: a reload due sooner waits until then (the file is written at once). HAProxy 2.6 ignores a SIGUSR2 that arrives while it is still starting the worker of the previous reload, so reloads closer than that would be lost. \"0s\" reloads at once.")
)

// Spec declares sink "template".
func Spec() node.Spec {
	return node.Spec{
		Kind:    node.KindSink,
		Type:    "template",
		Summary: "Renders one file from the whole collection with an HCL template, checks it, swaps it in and reloads the program reading it.",
		Doc: "The sink renders once per round of changes, after its input synced, and never before: a file rendered from part " +
			"of the collection would drop backends. Put a `debounce` transform in front for quiescence (`interval` is how long the " +
			"input must be quiet, `max_wait` how late a render may be while it keeps changing). Records are given to the template " +
			"sorted by key, so equal input renders equal bytes: a restart or a resync over an equal file writes nothing and reloads " +
			"nothing. At start and every `resync` the file on disk is compared with the render, and a file edited by hand is " +
			"restored (pipeline_sink_template_restored_total). A sensitive value may be rendered into the file, but never into " +
			"logs, plan (masked in the diff), explain, tap or audit. See docs/template.md.",
		Accepts: []node.DataType{node.Records},
		Body: schema.Block{Attrs: []schema.Attribute{templateAttr, templateFileAttr, pathAttr, modeAttr, ownerAttr, groupAttr, backupAttr, maxSizeAttr,
			checkAttr, checkTimeoutAttr, showOutputAttr, reloadAttr, signalAttr, pidFileAttr, pidProgramAttr, reloadTimeoutAttr, reloadGapAttr},
			Blocks: []*schema.BlockType{runtimeBlock}},
		NewSink: newSink,
	}
}

// Sink is a configured template sink. New reads and checks the template;
// Open does everything else.
type Sink struct {
	address       string
	tmpl          hcl.Expression
	ctx           *hcl.EvalContext // var, local and functions
	path          string
	pathRange     hcl.Range
	mode          os.FileMode
	owner, group  string
	backup        bool
	maxSize       int64
	showOutput    bool
	check         []string
	checkTimeout  time.Duration
	reload        []string
	signal        syscall.Signal
	pidFile       string
	pidProgram    string
	reloadTimeout time.Duration
	reloadGap     time.Duration
	secrets       []string   // values of sensitive variables: never shown
	fast          writer     // the template's fast path (fast.go); nil: HCL only
	fastSlots     int        // loops over records in it
	fastPaths     [][]string // the record paths it reads (a record's cells)
	sizeHint      atomic.Int64
	reuse         *reuse          // the passes of %{ for } kept between renders (cache.go)
	runtime       *haproxy.Client // the runtime block; nil: every change reloads
}

func newSink(b node.Build) (node.Sink, hcl.Diagnostics) {
	s := &Sink{address: b.Address, ctx: boundedFormat(b.Content.Ctx)}
	var diags hcl.Diagnostics
	add := func(d hcl.Diagnostics) { diags = append(diags, d...) }
	dir := ""
	if b.Config != nil {
		dir, s.secrets = b.Config.Dir, b.Config.Sensitive
	}
	abs := func(p string) string {
		if p != "" && !filepath.IsAbs(p) {
			return filepath.Join(dir, p)
		}
		return p
	}
	var d hcl.Diagnostics
	s.tmpl, d = decodeTemplate(b, abs)
	add(d)
	if s.tmpl != nil && !d.HasErrors() {
		s.fast, s.fastSlots, s.fastPaths = compileFast(s.tmpl, s.ctx)
		s.reuse = newReuse(s.tmpl, s.ctx)
		wrapLoops(s.tmpl) // after compileFast, which walks the template as written
	}
	var path string
	path, s.pathRange, d = pathAttr.Get(b.Content)
	add(d)
	s.path = abs(path)
	modeText, modeRange, d := modeAttr.Get(b.Content)
	add(d)
	if m, err := strconv.ParseUint(modeText, 8, 32); err != nil || m > 0o7777 {
		diags = append(diags, errAt(modeRange, "Invalid file mode", fmt.Sprintf("mode %q is not an octal permission such as \"0644\" or \"0640\".", modeText)))
	} else {
		s.mode = os.FileMode(m)
	}
	s.owner = ownerAttr.Read(b.Content, &diags)
	s.group = groupAttr.Read(b.Content, &diags)
	s.backup = backupAttr.Read(b.Content, &diags)
	s.maxSize = maxSizeAttr.Read(b.Content, &diags)
	s.showOutput = showOutputAttr.Read(b.Content, &diags)
	s.checkTimeout = checkTimeoutAttr.Read(b.Content, &diags)
	s.reloadTimeout = reloadTimeoutAttr.Read(b.Content, &diags)
	s.reloadGap = reloadGapAttr.Read(b.Content, &diags)
	var checkRange, reloadRange hcl.Range
	s.check, checkRange, d = checkAttr.Get(b.Content)
	add(d)
	add(emptyArgv(s.check, checkRange, "check_command"))
	s.reload, reloadRange, d = reloadAttr.Get(b.Content)
	add(d)
	add(emptyArgv(s.reload, reloadRange, "reload_command"))
	add(s.decodeSignal(b.Content, reloadRange, abs))
	s.runtime, d = decodeRuntime(b.Content, abs)
	add(d)
	s.pidProgram = pidProgramAttr.Read(b.Content, &diags)
	if s.pidProgram == "" {
		s.pidProgram = "haproxy"
		if len(s.check) > 0 {
			s.pidProgram = filepath.Base(s.check[0])
		}
	}
	return s, diags
}

// decodeTemplate reads template or template_file, parses it and checks it
// with records unknown: syntax errors, unknown functions and variables and
// unknown attributes of a record are reported now, at their line.
func decodeTemplate(b node.Build, abs func(string) string) (hcl.Expression, hcl.Diagnostics) {
	c := b.Content
	file, fileRange, diags := templateFileAttr.Get(c)
	inline := templateAttr.Has(c)
	switch {
	case inline && file != "":
		return nil, append(diags, errAt(fileRange, "Conflicting template", "Give either template (inline) or template_file, not both."))
	case !inline && file == "":
		return nil, append(diags, errAt(b.Content.Range, "Missing template", "Give template = <<-EOT ... EOT, or template_file = \"PATH\"."))
	case inline:
		expr, _, d := templateAttr.Get(c)
		return expr, append(append(diags, d...), checkRecordAttrs(expr)...)
	}
	path := abs(file)
	src, err := readTemplateFile(path)
	if err != nil {
		return nil, append(diags, errAt(fileRange, "Cannot read template file", fmt.Sprintf("%v.", err)))
	}
	if b.Config != nil && b.Config.Files != nil {
		// The template is part of the configuration: diagnostics show
		// its lines, and `pipeline manifests` ships it with the rest.
		b.Config.Files[path] = &hcl.File{Bytes: src}
	}
	expr, d := hclsyntax.ParseTemplate(src, path, hcl.InitialPos)
	diags = append(diags, d...)
	if d.HasErrors() {
		return nil, diags
	}
	diags = append(diags, schema.CheckExpr(expr, c.Ctx, []string{"records"})...)
	return expr, append(diags, checkRecordAttrs(expr)...)
}

// checkRecordAttrs reports an attribute other than key and value read from
// the variable of a for over records: a record has only those two.
func checkRecordAttrs(expr hcl.Expression) hcl.Diagnostics {
	syn, ok := expr.(hclsyntax.Node)
	if !ok {
		return nil
	}
	var diags hcl.Diagnostics
	_ = hclsyntax.VisitAll(syn, func(n hclsyntax.Node) hcl.Diagnostics {
		f, ok := n.(*hclsyntax.ForExpr)
		if !ok {
			return nil
		}
		coll, ok := f.CollExpr.(*hclsyntax.ScopeTraversalExpr)
		if !ok || len(coll.Traversal) != 1 || coll.Traversal.RootName() != "records" {
			return nil
		}
		for _, body := range []hcl.Expression{f.KeyExpr, f.ValExpr, f.CondExpr} {
			if body == nil {
				continue
			}
			for _, tr := range body.Variables() {
				if tr.RootName() != f.ValVar || len(tr) < 2 {
					continue
				}
				if a, ok := tr[1].(hcl.TraverseAttr); ok && a.Name != "key" && a.Name != "value" {
					diags = append(diags, errAt(a.SrcRange, "Unsupported attribute",
						fmt.Sprintf("A record has only key and value: write %s.value.%s to read the record's value.", f.ValVar, a.Name)))
				}
			}
		}
		return nil
	})
	return diags
}

func (s *Sink) decodeSignal(c *schema.Content, reloadRange hcl.Range, abs func(string) string) hcl.Diagnostics {
	name, sigRange, diags := signalAttr.Get(c)
	pid, pidRange, d := pidFileAttr.Get(c)
	diags = append(diags, d...)
	s.pidFile = abs(pid)
	if name == "" {
		if pid != "" {
			diags = append(diags, errAt(pidRange, "pid_file without reload_signal", "pid_file names the process reload_signal goes to: set reload_signal = \"SIGUSR2\" (or SIGHUP), or remove pid_file."))
		}
		return diags
	}
	sig, ok := signals[strings.ToUpper(name)]
	if !ok {
		diags = append(diags, errAt(sigRange, "Unknown signal", fmt.Sprintf("reload_signal %q is not one of SIGHUP, SIGUSR1, SIGUSR2, SIGTERM.", name)))
	}
	s.signal = sig
	if pid == "" {
		diags = append(diags, errAt(sigRange, "reload_signal without pid_file", "Set pid_file to the file holding the process id the signal goes to (HAProxy: its -p file)."))
	}
	if len(s.reload) > 0 {
		diags = append(diags, errAt(reloadRange, "Two ways to reload", "Give reload_command or reload_signal, not both."))
	}
	return diags
}

var signals = map[string]syscall.Signal{"SIGHUP": syscall.SIGHUP, "SIGUSR1": syscall.SIGUSR1, "SIGUSR2": syscall.SIGUSR2, "SIGTERM": syscall.SIGTERM,
	"HUP": syscall.SIGHUP, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "TERM": syscall.SIGTERM}

func emptyArgv(argv []string, rng hcl.Range, name string) hcl.Diagnostics {
	if len(argv) > 0 && argv[0] == "" {
		return hcl.Diagnostics{errAt(rng, "Empty command", name+" starts with the program to run: [\"haproxy\", \"-c\", \"-f\", \"{{path}}\"].")}
	}
	return nil
}

func errAt(rng hcl.Range, summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}
}

// Claims names the file: two sinks rendering one file are refused by validate.
func (s *Sink) Claims() []node.Claim {
	return []node.Claim{{What: "rendered file", Name: filepath.Clean(s.path), Range: s.pathRange}}
}

// Needs implements node.Access: the file's directory is shared with the
// program that reads it (a hostPath volume in `pipeline manifests`), and
// so is the pid file's.
func (s *Sink) Needs() node.Needs {
	paths := []string{filepath.Dir(s.path)}
	if s.pidFile != "" && filepath.Dir(s.pidFile) != paths[0] {
		paths = append(paths, filepath.Dir(s.pidFile))
	}
	return node.Needs{Host: node.HostNeeds{Paths: paths}}
}

var (
	_ node.Sink     = (*Sink)(nil)
	_ node.Access   = (*Sink)(nil)
	_ node.Renderer = (*Sink)(nil)
)
