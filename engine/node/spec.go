package node

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/schema"
)

// Kind is a node's top-level block kind.
type Kind = schema.Kind

// The node kinds.
const (
	KindSource    = schema.KindSource
	KindTransform = schema.KindTransform
	KindSink      = schema.KindSink
)

// DataType names what flows out of a node, so the compiler can check that a
// consumer accepts what its input emits.
type DataType string

const (
	// Objects are whole Kubernetes-style objects keyed by namespace/name
	// (or by index_by); the value is the object.
	Objects DataType = "objects"
	// Records are key -> value entries meant for sinks (an IP and its labels).
	Records DataType = "records"
	// SameAsInput marks a transform that emits what it receives (debounce, grace_period).
	SameAsInput DataType = "same as input"
)

// Emitter is implemented by a built source or transform whose
// configuration decides what it emits (source "files": objects, or records
// with a data format); it overrides Spec.Output.
type Emitter interface{ Emits() DataType }

// OutputCase says what a node emits when one attribute holds one of
// Values, for a type whose built node is an Emitter. It is declared so
// that `pipeline schema` and the reference can say every case.
type OutputCase struct {
	Attr   string   // the attribute that decides: "format"
	Values []string // its values in this case, as the attribute's enum spells them
	Output DataType
}

// Spec declares one node type. It is the single source of truth for decoding,
// validation, `pipeline schema` and the reference docs.
type Spec struct {
	Kind    Kind
	Type    string // HCL label: "ebpf_map"
	Summary string // one line; heads the generated docs
	Doc     string // optional paragraphs for the docs
	Body    schema.Block
	// Output is what a source or transform emits; with Outputs, what it
	// emits by default.
	Output DataType
	// Outputs, for a type whose built node is an Emitter, lists what it
	// emits in each case of its configuration. Empty: always Output.
	Outputs []OutputCase
	// Accepts lists what a transform or sink takes as input; empty means any.
	Accepts []DataType
	// NewSource, NewTransform and NewSink construct a node of each kind;
	// a spec sets exactly the one of its Kind. The constructor decodes and
	// checks the block and returns the node with every diagnostic. It does
	// no I/O and starts no goroutine, so validate and plan can build whole
	// graphs cheaply.
	NewSource    func(b Build) (Source, hcl.Diagnostics)
	NewTransform func(b Build) (Transform, hcl.Diagnostics)
	NewSink      func(b Build) (Sink, hcl.Diagnostics)
}

// Built is a node built by its Spec: the field of the spec's Kind holds
// it and the others are nil. All are nil when the constructor returned
// no node.
type Built struct {
	Source    Source
	Transform Transform
	Sink      Sink
}

// Impl returns the built node whatever its kind, or nil, for asserting
// the optional interfaces a node may implement (Projector, Encoder,
// Access …). Its role is its typed field, never an assertion.
func (b Built) Impl() any {
	switch {
	case b.Source != nil:
		return b.Source
	case b.Transform != nil:
		return b.Transform
	case b.Sink != nil:
		return b.Sink
	}
	return nil
}

// Build calls the constructor of s.Kind. Like NewRegistry, it panics
// unless that constructor, and only it, is set.
func (s Spec) Build(b Build) (Built, hcl.Diagnostics) {
	if err := s.checkConstructors(); err != nil {
		panic(fmt.Sprintf("node: %s %q: %v", s.Kind, s.Type, err))
	}
	var out Built
	var diags hcl.Diagnostics
	switch s.Kind {
	case KindSource:
		out.Source, diags = s.NewSource(b)
	case KindTransform:
		out.Transform, diags = s.NewTransform(b)
	case KindSink:
		out.Sink, diags = s.NewSink(b)
	}
	return out, diags
}

// checkConstructors says what is wrong with s's constructors: exactly the
// one of s.Kind must be set.
func (s Spec) checkConstructors() error {
	var want string
	var set []string
	for _, c := range []struct {
		kind Kind
		name string
		set  bool
	}{
		{KindSource, "NewSource", s.NewSource != nil},
		{KindTransform, "NewTransform", s.NewTransform != nil},
		{KindSink, "NewSink", s.NewSink != nil},
	} {
		if c.kind == s.Kind {
			want = c.name
		}
		if c.set {
			set = append(set, c.name)
		}
	}
	switch {
	case want == "":
		return fmt.Errorf("unknown kind %q", s.Kind)
	case len(set) == 0:
		return fmt.Errorf("no constructor: set %s", want)
	case len(set) > 1 || set[0] != want:
		return fmt.Errorf("sets %s: set only %s", strings.Join(set, " and "), want)
	}
	return nil
}

// checkOutputs says what is wrong with s.Outputs: each case needs an
// attribute, values and an output, and Output must be one of them.
func (s Spec) checkOutputs() error {
	found := len(s.Outputs) == 0 // no cases: Output alone
	for _, c := range s.Outputs {
		if c.Attr == "" || len(c.Values) == 0 || c.Output == "" {
			return fmt.Errorf("incomplete output case %+v", c)
		}
		found = found || c.Output == s.Output
	}
	if !found {
		return fmt.Errorf("Output %q is in none of the Outputs", s.Output)
	}
	return nil
}

// Build is what a constructor receives.
type Build struct {
	Address string
	Name    string
	Content *schema.Content
	// Input describes the node's input; nil for sources.
	Input *Upstream
	// Config is the whole loaded configuration (clusters, base directory).
	Config *schema.Config
}

// Upstream describes the node an input attribute refers to.
type Upstream struct {
	Address string
	Type    DataType
}

// Registry holds the node types of one build of the program. There is no
// global registry: cmd/pipeline builds one from its list of Specs and a
// test builds one holding exactly the types it needs.
type Registry struct {
	specs map[Kind]map[string]Spec
}

// NewRegistry builds a registry. It panics on a duplicate Kind+Type, a
// Spec missing a required field, and a Spec whose constructor is not
// exactly the one of its Kind: all are programmer errors.
func NewRegistry(specs ...Spec) *Registry {
	r := &Registry{specs: map[Kind]map[string]Spec{}}
	for _, s := range specs {
		if s.Kind == "" || s.Type == "" || s.Summary == "" {
			panic(fmt.Sprintf("node.NewRegistry: incomplete spec %q/%q", s.Kind, s.Type))
		}
		if err := s.checkConstructors(); err != nil {
			panic(fmt.Sprintf("node.NewRegistry: %s %q: %v", s.Kind, s.Type, err))
		}
		if s.Kind != KindSink && s.Output == "" {
			panic(fmt.Sprintf("node.NewRegistry: %s %q declares no Output", s.Kind, s.Type))
		}
		if err := s.checkOutputs(); err != nil {
			panic(fmt.Sprintf("node.NewRegistry: %s %q: %v", s.Kind, s.Type, err))
		}
		if r.specs[s.Kind] == nil {
			r.specs[s.Kind] = map[string]Spec{}
		}
		if _, dup := r.specs[s.Kind][s.Type]; dup {
			panic(fmt.Sprintf("node.NewRegistry: duplicate %s type %q", s.Kind, s.Type))
		}
		r.specs[s.Kind][s.Type] = s
	}
	return r
}

// Lookup returns the spec of a kind and type.
func (r *Registry) Lookup(k Kind, typ string) (Spec, bool) {
	s, ok := r.specs[k][typ]
	return s, ok
}

// Types returns the sorted type names of a kind.
func (r *Registry) Types(k Kind) []string {
	return slices.Sorted(maps.Keys(r.specs[k]))
}

// All returns every spec sorted by kind (source, transform, sink) then type.
func (r *Registry) All() []Spec {
	var out []Spec
	for _, k := range schema.Kinds {
		for _, t := range r.Types(k) {
			out = append(out, r.specs[k][t])
		}
	}
	return out
}
