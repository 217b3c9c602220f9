package schema

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/pipeline/pipeline/internal/regfile"
)

// Kind is the top-level block kind of a graph node.
type Kind string

// The node kinds.
const (
	KindSource    Kind = "source"
	KindTransform Kind = "transform"
	KindSink      Kind = "sink"
)

// Kinds lists the node kinds in graph order.
var Kinds = []Kind{KindSource, KindTransform, KindSink}

// NodeBlock is one source, transform or sink block, not yet decoded: its body
// is decoded against the registered type's schema by the engine.
type NodeBlock struct {
	Kind      Kind
	Type      string
	Name      string
	Body      hcl.Body
	TypeRange hcl.Range
	NameRange hcl.Range
	DeclRange hcl.Range
}

// Address is the node's name in logs, metrics, plan and diagnostics: KIND.TYPE.NAME.
func (n *NodeBlock) Address() string { return Address(n.Kind, n.Type, n.Name) }

// Address formats a node address.
func Address(k Kind, typ, name string) string { return string(k) + "." + typ + "." + name }

// Config is a loaded configuration: every file's blocks merged, variables and
// locals evaluated, clusters decoded.
type Config struct {
	Dir       string // directory of the first path; relative paths resolve from here
	Files     map[string]*hcl.File
	Variables map[string]*Variable
	Clusters  map[string]*Cluster
	Nodes     []*NodeBlock
	// LeaderElection is the leader_election block; nil when absent.
	LeaderElection *LeaderElection
	// Ctx evaluates compile-time expressions: var, local and functions.
	Ctx *hcl.EvalContext
	// Sensitive holds the values of sensitive variables and attributes so
	// that views can redact them.
	Sensitive []string

	budget *budget // what Ctx's functions have built; see Seal
	// unmarked is set when no variable or local value holds a sensitive
	// value (see MayHoldSensitive).
	unmarked bool
}

// MayHoldSensitive reports whether a variable or local value may hold a
// sensitive value. When none does, an attribute's value is sensitive only
// when the attribute is declared Sensitive, so Block.SensitiveValues need
// not search the others.
func (c *Config) MayHoldSensitive() bool { return !c.unmarked }

// Seal ends the load's evaluation budget: the configuration is compiled,
// and what its functions build from now on (per record, for as long as
// the run lasts) is bounded per value, not in total. graph.Compile seals
// the configuration it compiled.
func (c *Config) Seal() {
	if c != nil && c.budget != nil {
		c.budget.sealed.Store(true)
	}
}

var topSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "variable", LabelNames: []string{"name"}},
	{Type: "locals"},
	{Type: "cluster", LabelNames: []string{"name"}},
	{Type: "leader_election"},
	{Type: "source", LabelNames: []string{"type", "name"}},
	{Type: "transform", LabelNames: []string{"type", "name"}},
	{Type: "sink", LabelNames: []string{"type", "name"}},
}}

// Options are the inputs to Load besides the files.
type Options struct {
	// Vars are -var name=value settings, in order.
	Vars []string
	// Environ is the environment for PIPELINE_VAR_name and env(); nil means os.Environ().
	Environ []string
	// Overlay holds file contents that replace what the disk holds, by
	// file name as Load lists it (an editor's unsaved buffers). A *.hcl
	// name in an overlay that is not on disk joins its directory.
	Overlay map[string][]byte
	// Parses, when set, holds parses of earlier loads: a file whose
	// content is there is not parsed again, and a new parse is kept.
	Parses *Parses
}

// Loader parses configuration files and keeps their bytes for diagnostics.
type Loader struct {
	parser *hclparse.Parser
}

// NewLoader returns a Loader.
func NewLoader() *Loader { return &Loader{parser: hclparse.NewParser()} }

// Files returns every file parsed so far, for rendering diagnostic snippets.
func (l *Loader) Files() map[string]*hcl.File { return l.parser.Files() }

// ParseSource parses one in-memory file (used by tests and the fuzzer).
func (l *Loader) ParseSource(name string, src []byte, opts Options) (*Config, hcl.Diagnostics) {
	f, diags := l.parse(src, name)
	if f == nil || diags.HasErrors() {
		return nil, diags
	}
	cfg, d := l.build([]*hcl.File{f}, filepath.Dir(name), opts)
	return cfg, append(diags, d...)
}

// Load parses the given files and directories (a directory contributes its
// *.hcl files) and merges their blocks, as Terraform does.
func (l *Loader) Load(paths []string, opts Options) (*Config, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	files, err := expandPaths(paths, opts.Overlay)
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read configuration", Detail: err.Error()}}
	}
	if len(files) > MaxConfigFiles {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Too many configuration files",
			Detail: fmt.Sprintf("The configuration has %d files; at most %d are read. Merge them, or move data into files read by a source.", len(files), MaxConfigFiles)}}
	}
	var parsed []*hcl.File
	var total int64
	blocks := 0 // top-level blocks parsed so far
	for _, name := range files {
		if st, err := os.Stat(name); err == nil {
			if total += st.Size(); total > MaxConfigTotalBytes {
				return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Configuration too large",
					Detail:  fmt.Sprintf("The configuration's files hold more than %d MiB together (at %s). Move data into files read by a source.", MaxConfigTotalBytes>>20, name),
					Subject: &hcl.Range{Filename: name, Start: hcl.InitialPos, End: hcl.InitialPos}})
			}
		}
		f, d := l.parseFile(name, opts)
		diags = append(diags, d...)
		if f != nil {
			parsed = append(parsed, f)
			// Over the budget in blocks alone: the files after it are not
			// parsed (build counts the local values too).
			if b, ok := f.Body.(*hclsyntax.Body); ok {
				if blocks += len(b.Blocks); blocks > MaxConfigBlocks {
					return nil, append(diags, tooManyBlocks(f))
				}
			}
		}
	}
	if diags.HasErrors() {
		// A file that does not parse is only partly known: decoding it would
		// add errors that merely echo the syntax error.
		return nil, diags
	}
	dir := "."
	if len(paths) > 0 {
		if st, err := os.Stat(paths[0]); err == nil && st.IsDir() {
			dir = paths[0]
		} else {
			dir = filepath.Dir(paths[0])
		}
	}
	cfg, d := l.build(parsed, dir, opts)
	return cfg, append(diags, d...)
}

// parseFile reads one file, refuses one too large or nested too deeply
// (CheckNesting), and parses it.
func (l *Loader) parseFile(name string, opts Options) (*hcl.File, hcl.Diagnostics) {
	src := opts.Overlay[name]
	if src == nil {
		var diags hcl.Diagnostics
		if src, diags = readHCLFile(name); diags.HasErrors() {
			return nil, diags
		}
	}
	if f := opts.Parses.get(name, src); f != nil && l.parser.Files()[name] == nil {
		l.parser.AddFile(name, f)
		return f, nil
	}
	f, diags := l.parse(src, name)
	if f != nil && len(diags) == 0 {
		opts.Parses.put(name, f)
	}
	return f, diags
}

// parse parses src with ParseConfig and keeps the file, as the parser's
// ParseHCL would: a name parsed before is not parsed again.
func (l *Loader) parse(src []byte, name string) (*hcl.File, hcl.Diagnostics) {
	if f := l.parser.Files()[name]; f != nil {
		return f, nil
	}
	f, diags := ParseConfig(src, name)
	if f != nil {
		l.parser.AddFile(name, f)
	}
	return f, diags
}

// readHCLFile reads a regular file of at most MaxConfigBytes.
func readHCLFile(name string) ([]byte, hcl.Diagnostics) {
	data, fi, err := regfile.Read(name, MaxConfigBytes)
	switch {
	case errors.Is(err, regfile.ErrTooLarge):
		return nil, hcl.Diagnostics{tooLarge(name, fi.Size())}
	case err != nil:
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read configuration file", Detail: err.Error(),
			Subject: &hcl.Range{Filename: name, Start: hcl.InitialPos, End: hcl.InitialPos}}}
	}
	return data, nil
}

// ConfigFiles lists the files Load reads for paths: each file path, and
// each directory's *.hcl files, sorted. A hot reload hashes exactly these.
func ConfigFiles(paths []string) ([]string, error) { return expandPaths(paths, nil) }

func expandPaths(paths []string, overlay map[string][]byte) ([]string, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("no configuration path given")
	}
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("configuration path: %w", err)
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		matches, err := filepath.Glob(filepath.Join(p, "*.hcl"))
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", p, err)
		}
		for name := range overlay {
			if filepath.Dir(name) == filepath.Clean(p) && filepath.Ext(name) == ".hcl" && !slices.Contains(matches, name) {
				matches = append(matches, name)
			}
		}
		matches = slices.DeleteFunc(matches, func(m string) bool { return strings.HasSuffix(m, ".test.hcl") }) // config tests (pipeline test)
		if len(matches) == 0 {
			return nil, fmt.Errorf("directory %s holds no *.hcl file", p)
		}
		sort.Strings(matches)
		out = append(out, matches...)
	}
	return out, nil
}

func (l *Loader) build(files []*hcl.File, dir string, opts Options) (*Config, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	cfg := &Config{Dir: dir, Files: l.parser.Files(), Variables: map[string]*Variable{}, Clusters: map[string]*Cluster{}}
	var localAttrs []*hcl.Attribute
	var clusterBlocks, leaderBlocks []*hcl.Block
	seen := map[string]hcl.Range{}
	dup := func(what, name string, rng hcl.Range) bool {
		key := what + "\x00" + name
		if first, ok := seen[key]; ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError,
				Summary: fmt.Sprintf("Duplicate %s", what),
				Detail:  fmt.Sprintf("A %s named %q was already declared at %s. Names must be unique across all files.", what, name, Pos(first)),
				Subject: rng.Ptr()})
			return true
		}
		seen[key] = rng
		return false
	}
	decls := 0
	for _, f := range files {
		content, d := f.Body.Content(topSchema)
		diags = append(diags, d...)
		if decls += len(content.Blocks); decls > MaxConfigBlocks {
			return nil, append(diags, tooManyBlocks(f))
		}
		for _, blk := range content.Blocks {
			switch blk.Type {
			case "variable":
				if !validName(blk.Labels[0], blk.LabelRanges[0], "variable", &diags) || dup("variable", blk.Labels[0], blk.LabelRanges[0]) {
					continue
				}
				v, d := decodeVariable(blk)
				diags = append(diags, d...)
				cfg.Variables[v.Name] = v
			case "locals":
				attrs, d := blk.Body.JustAttributes()
				diags = append(diags, d...)
				if decls += len(attrs); decls > MaxConfigBlocks {
					return nil, append(diags, tooManyBlocks(f))
				}
				for _, a := range sortedAttrs(attrs) {
					if !dup("local value", a.Name, a.NameRange) {
						localAttrs = append(localAttrs, a)
					}
				}
			case "leader_election":
				if len(leaderBlocks) > 0 {
					diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate leader_election block",
						Detail:  fmt.Sprintf("A leader_election block was already declared at %s; a configuration has at most one.", Pos(leaderBlocks[0].DefRange)),
						Subject: blk.DefRange.Ptr()})
					continue
				}
				leaderBlocks = append(leaderBlocks, blk)
			case "cluster":
				if validName(blk.Labels[0], blk.LabelRanges[0], "cluster", &diags) && !dup("cluster", blk.Labels[0], blk.LabelRanges[0]) {
					clusterBlocks = append(clusterBlocks, blk)
				}
			default:
				n := &NodeBlock{Kind: Kind(blk.Type), Type: blk.Labels[0], Name: blk.Labels[1], Body: blk.Body,
					TypeRange: blk.LabelRanges[0], NameRange: blk.LabelRanges[1], DeclRange: blk.DefRange}
				if !validName(n.Name, n.NameRange, blk.Type, &diags) || dup(blk.Type, n.Type+"."+n.Name, n.NameRange) {
					continue
				}
				cfg.Nodes = append(cfg.Nodes, n)
			}
		}
	}
	environ := opts.Environ
	if environ == nil {
		environ = os.Environ()
	}
	vars, sensitive, d := evalVariables(cfg.Variables, opts.Vars, environ)
	diags = append(diags, d...)
	cfg.Sensitive = sensitive
	var bud *budget
	cfg.Ctx, bud = newEvalContext(dir, environ)
	cfg.budget = bud
	cfg.Ctx.Variables["var"] = vars
	diags = append(diags, evalLocals(cfg.Ctx, bud, localAttrs)...)
	cfg.unmarked = !vars.ContainsMarked() && !cfg.Ctx.Variables["local"].ContainsMarked()
	for _, blk := range clusterBlocks {
		c, d := decodeCluster(blk, cfg.Ctx, dir)
		diags = append(diags, d...)
		cfg.Clusters[c.Name] = c
		cfg.Sensitive = append(cfg.Sensitive, c.sensitive...)
	}
	for _, blk := range leaderBlocks {
		le, d := decodeLeaderElection(blk, cfg)
		diags = append(diags, d...)
		cfg.LeaderElection = le
	}
	return cfg, diags
}

func sortedAttrs(attrs hcl.Attributes) []*hcl.Attribute {
	out := make([]*hcl.Attribute, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *hcl.Attribute) int {
		if a.NameRange.Start.Byte != b.NameRange.Start.Byte {
			return a.NameRange.Start.Byte - b.NameRange.Start.Byte
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

func validName(name string, rng hcl.Range, what string, diags *hcl.Diagnostics) bool {
	ok := name != ""
	for i, r := range name {
		letter := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		digit := r >= '0' && r <= '9'
		if !(letter || (i > 0 && digit)) {
			ok = false
		}
	}
	if !ok {
		*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid " + what + " name",
			Detail:  "A name must start with a letter or underscore and may contain only letters, digits and underscores (a dash would read as subtraction in a reference).",
			Subject: rng.Ptr()})
	}
	return ok
}

// Pos is a range's start as file:line:col, the one way messages name a
// position (hcl.Range's String gives file:line,col-col).
func Pos(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

// A configuration's total size is bounded besides each file's
// (MaxConfigBytes): its files, their bytes together, and its blocks plus
// local values, so that what one load may cost in time and memory is
// bounded (bench row P8 measures it at 10,000 blocks).
const (
	MaxConfigFiles      = 1000
	MaxConfigTotalBytes = 64 << 20
	MaxConfigBlocks     = 20000
)

func tooManyBlocks(f *hcl.File) *hcl.Diagnostic {
	rng := f.Body.MissingItemRange()
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Too many blocks",
		Detail:  fmt.Sprintf("The configuration declares more than %d blocks and local values together (counted up to this file). Move data into files read by a source, or into one local value holding a list.", MaxConfigBlocks),
		Subject: &rng}
}
