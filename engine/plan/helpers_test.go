package plan

import "github.com/pipeline/pipeline/engine/internal/enginetest"

// The fakes the runtime's and plan's tests share (engine/internal/enginetest).
type (
	scriptSource  = enginetest.ScriptSource
	passTransform = enginetest.PassTransform
)

var (
	newScriptSource = enginetest.NewScriptSource
	mustCompile     = enginetest.MustCompile
	str             = enginetest.Str
	recs            = enginetest.Recs
	ctyEq           = enginetest.CtyEq
)
