package node

import (
	"time"

	"github.com/pipeline/pipeline/schema"
)

// Attributes every transform and sink has. The engine reads them; node
// constructors do not.
var (
	InputAttr = schema.Ref("input", "source", "transform").
			Doc("The node whose output this node consumes, as a reference: `source.kubernetes.pods`. Exactly one of `input` and `inputs` is set.").
			Example("transform.debounce.batch")
	// Fan-in: a node that consumes several inputs.
	InputsAttr = schema.Refs("inputs", "source", "transform").
			Doc("The nodes whose outputs this node consumes together, instead of `input`. The union is synced once every input is, and a key lives while any input wants it. All inputs must emit the same kind of data.").
			Example("[source.kubernetes.pods, source.static.cidrs]")
	OnConflictAttr = schema.Enum("on_conflict", ConflictError, ConflictFirst, ConflictLast).Default(ConflictError, `"error"`).
			Doc("What happens when two `inputs` hold one key with different values: \"error\" (a configuration error when the values are known at load time; at run time the key keeps the value of the input listed first, and the conflict is counted in pipeline_node_conflicts_total, logged and shown by `pipeline explain`), \"first\" or \"last\" (the value of the input listed first or last among those holding the key). On a sink it also decides between input keys its target stores as one key (an ebpf_map ipv4_prefix key holds 10.0.0.0/8 for both \"10.0.0.0/8\" and \"10.1.2.3/8\"), in sorted order of the input keys: \"first\" takes the smallest's value, \"last\" the largest's, and \"error\" the smallest's, with the conflict logged, shown by `pipeline plan` and `pipeline explain`.")
	MergeAttr = schema.Expr("merge", "key", "values").
			Doc("An expression that computes the value of a key that two or more `inputs` hold, from `key` and `values` (the values, in the order of `inputs`). It replaces `on_conflict`; a failing evaluation counts as a conflict.").
			Example("merge(values...)")
	PruneAttr = schema.Bool("prune").Default(true, "true").
			Doc("Delete entries of the target that no input record wants. Never happens before every upstream source has synced. With false, foreign entries are left alone.")
	ResyncAttr = schema.Duration("resync").Default(5*time.Minute, `"5m"`).
			Doc("Interval of the full reconcile that reads the target, diffs it against the desired state and repairs drift. \"0s\" disables the periodic reconcile; otherwise it is at least \"1s\".")
	OnRemoveAttr = schema.Enum("on_remove", OnRemoveKeep, OnRemoveClean).Default(OnRemoveKeep, `"keep"`).
			Doc("What a reload that removes this sink from the configuration does to its target: \"keep\" leaves every entry in place; \"clean\" deletes the entries the sink owns (with prune = false, only those it wrote). Changing it alone does not restart the sink.")
)

// The values of on_remove.
const (
	OnRemoveKeep  = "keep"
	OnRemoveClean = "clean"
)

// The on_conflict values.
const (
	ConflictError = "error"
	ConflictFirst = "first"
	ConflictLast  = "last"
)

// KnownRecords is implemented by a source whose records are known when the
// configuration loads (static): the compiler checks fan-in conflicts
// between such sources before anything runs.
type KnownRecords interface {
	KnownRecords() []Record
}

// FullBody is the spec's body plus the attributes the engine handles for
// every node of its kind. Decoding, validation and docs use it.
func (s Spec) FullBody() schema.Block {
	switch s.Kind {
	case KindTransform:
		return s.Body.With(InputAttr, InputsAttr, OnConflictAttr, MergeAttr)
	case KindSink:
		return s.Body.With(InputAttr, InputsAttr, OnConflictAttr, MergeAttr, PruneAttr, ResyncAttr, OnRemoveAttr, MaxDeletesAttr)
	}
	return s.Body
}
