package node

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/schema"
)

// MaxDeletesAttr is the deletion brake of a sink that deletes: the most
// deletes that may be pending at once, as a count or a percentage of the
// entries the target holds. docs/deletion-brake.md says why the default
// and the floor are what they are.
var MaxDeletesAttr = func() *schema.Attr[cty.Value] {
	a := schema.Value("max_deletes").Default(cty.StringVal(DefaultMaxDeletes), `"50%"`).
		Doc("The deletion brake: the most deletes that may be pending at once, as a count (`100`) or a percentage of the entries the target holds (`\"50%\"`). " +
			"When more are needed at once (an emptied file, a selector that matches nothing), none of them is applied: they are held, upserts go on, and the sink shows them in /readyz (degraded), the log, pipeline_sink_deletes_held, `pipeline plan` and `pipeline explain`. " +
			"They are released when the input wants enough keys back, or when a reload raises max_deletes; never by a resync or a restart. " +
			"Under a percentage, up to 10 deletes always pass, so that a small sink's churn is not held. `\"100%\"` turns the brake off; `0` holds every delete. " +
			"Append-only sinks (log, nats, audit) delete nothing and ignore it.").
		Example(`"25%"`)
	a.Info().Type = "number or string"
	return a
}()

// DefaultMaxDeletes is the brake of a sink that does not set max_deletes.
const DefaultMaxDeletes = "50%"

// MaxDeletesFloor is how many deletes always pass under a percentage.
const MaxDeletesFloor = 10

// MaxDeletes is a decoded max_deletes: a count, or a percentage of the
// entries the target holds (Percent). The zero MaxDeletes is the default,
// DefaultMaxDeletes.
type MaxDeletes struct {
	Count   int64
	Percent float64
	IsPct   bool
	set     bool
}

var defaultMaxDeletes = MaxDeletes{Percent: 50, IsPct: true, set: true}

func (m MaxDeletes) orDefault() MaxDeletes {
	if !m.set {
		return defaultMaxDeletes
	}
	return m
}

// Limit is how many deletes may be pending at once in a target holding
// actual entries.
func (m MaxDeletes) Limit(actual int) int {
	m = m.orDefault()
	if !m.IsPct {
		return int(m.Count)
	}
	if m.Percent >= 100 {
		return max(actual, MaxDeletesFloor)
	}
	return max(int(m.Percent*float64(actual)/100), MaxDeletesFloor)
}

// String is m as written in HCL.
func (m MaxDeletes) String() string {
	m = m.orDefault()
	if m.IsPct {
		return strconv.FormatFloat(m.Percent, 'f', -1, 64) + "%"
	}
	return strconv.FormatInt(m.Count, 10)
}

// ReadMaxDeletes decodes max_deletes from a sink's content.
func ReadMaxDeletes(c *schema.Content) (MaxDeletes, hcl.Diagnostics) {
	v, rng, diags := MaxDeletesAttr.Get(c)
	if diags.HasErrors() {
		return MaxDeletes{}, diags
	}
	m, err := ParseMaxDeletes(v)
	if err != nil {
		return MaxDeletes{}, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid max_deletes",
			Detail:  err.Error() + ` Write a whole number of deletes (100) or a percentage of the entries the target holds ("50%").`,
			Subject: rng.Ptr()}}
	}
	return m, nil
}

// ParseMaxDeletes decodes a max_deletes value: a whole number at least 0,
// or a string "N%" with N from 0 to 100 (or a plain count written as a
// string).
func ParseMaxDeletes(v cty.Value) (MaxDeletes, error) {
	v, _ = v.Unmark()
	if v.IsNull() || !v.IsKnown() {
		return MaxDeletes{}, errors.New("max_deletes has no value")
	}
	switch v.Type() {
	case cty.Number:
		return countOf(v.AsBigFloat())
	case cty.String:
		s := strings.TrimSpace(v.AsString())
		if p, ok := strings.CutSuffix(s, "%"); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil || f < 0 || f > 100 {
				return MaxDeletes{}, fmt.Errorf("%q is not a percentage from 0%% to 100%%", s)
			}
			return MaxDeletes{Percent: f, IsPct: true, set: true}, nil
		}
		f, ok := new(big.Float).SetString(s)
		if !ok {
			return MaxDeletes{}, fmt.Errorf("%q is neither a count nor a percentage", s)
		}
		return countOf(f)
	}
	return MaxDeletes{}, fmt.Errorf("max_deletes is a %s", v.Type().FriendlyName())
}

func countOf(f *big.Float) (MaxDeletes, error) {
	n, acc := f.Int64()
	if acc != big.Exact || !f.IsInt() || n < 0 {
		return MaxDeletes{}, fmt.Errorf("%s is not a whole number at least 0", schema.NumberText(f))
	}
	return MaxDeletes{Count: n, set: true}, nil
}
