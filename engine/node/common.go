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

// FullBody is the spec's body plus the attributes the engine handles for
// every node of its kind. Decoding, validation and docs use it.
func (s Spec) FullBody() schema.Block {
	switch s.Kind {
	case KindTransform:
		return s.Body.With(InputAttr, InputsAttr, OnConflictAttr, MergeAttr)
	case KindSink:
		return s.Body.With(InputAttr, InputsAttr, OnConflictAttr, MergeAttr, PruneAttr, ResyncAttr, OnRemoveAttr)
	}
	return s.Body
}
