package files

import (
	"bytes"
	"encoding/json"

	"github.com/zclconf/go-cty/cty"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/ctyconv"
)

// packedJSON is a record value at rest: the compact JSON of the decoded
// object or item it stands for (node.Packed). The source and its output
// keep it so, and a consumer receives the cty value built from it. A cty
// object carries a type map and an attribute map at every level, which
// for a small Kubernetes object is about 25 times its JSON
// (docs/performance.md, F1).
type packedJSON []byte

// packed returns the record value of x, a value decoded from JSON or YAML
// (maps, slices, strings, numbers, booleans, nil): packed when it is an
// object or an array, else converted. Decoding the JSON again yields
// values of the same Go types, so the built value equals what converting
// x gives.
func packed(x any) (cty.Value, error) {
	switch x.(type) {
	case map[string]any, []any:
		if b, err := json.Marshal(x); err == nil {
			return node.PackedVal(packedJSON(b)), nil
		}
	}
	return ctyconv.ToCty(x) // a scalar, or what JSON cannot hold: converting says why
}

// Value implements node.Packed.
func (p packedJSON) Value() cty.Value {
	var x any
	if err := utiljson.Unmarshal(p, &x); err == nil {
		if v, err := ctyconv.ToCty(x); err == nil {
			return v
		}
	}
	return cty.NullVal(cty.DynamicPseudoType) // not reached: p was marshalled from such a value
}

// Same implements node.Packed: the JSON of equal values is equal, as
// encoding/json writes object keys sorted.
func (p packedJSON) Same(o node.Packed) bool {
	q, ok := o.(packedJSON)
	return ok && bytes.Equal(p, q)
}

var _ node.Packed = packedJSON(nil)
