package node

import (
	"fmt"
	"sort"

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

// Status says whether a type's runtime exists. Types registered with their
// full schema before their runtime is written validate, but `run` refuses them.
type Status int

const (
	// Ready types run.
	Ready Status = iota
	// Planned types validate but cannot run yet.
	Planned
)

// Spec declares one node type. It is the single source of truth for decoding,
// validation, `pipeline schema` and the reference docs.
type Spec struct {
	Kind    Kind
	Type    string // HCL label: "ebpf_map"
	Summary string // one line; heads the generated docs
	Doc     string // optional paragraphs for the docs
	Body    schema.Block
	// Output is what a source or transform emits.
	Output DataType
	// Accepts lists what a transform or sink takes as input; empty means any.
	Accepts []DataType
	Status  Status
	// New decodes and checks the block and returns a Source, Transform or
	// Sink. It does no I/O and starts no goroutine, so validate and plan can
	// build whole graphs cheaply.
	New func(b Build) (any, hcl.Diagnostics)
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

// NewRegistry builds a registry. It panics on a duplicate Kind+Type or a
// Spec missing a required field: both are programmer errors.
func NewRegistry(specs ...Spec) *Registry {
	r := &Registry{specs: map[Kind]map[string]Spec{}}
	for _, s := range specs {
		if s.Kind == "" || s.Type == "" || s.Summary == "" || s.New == nil {
			panic(fmt.Sprintf("node.NewRegistry: incomplete spec %q/%q", s.Kind, s.Type))
		}
		if s.Kind != KindSink && s.Output == "" {
			panic(fmt.Sprintf("node.NewRegistry: %s %q declares no Output", s.Kind, s.Type))
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
	out := make([]string, 0, len(r.specs[k]))
	for t := range r.specs[k] {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
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
