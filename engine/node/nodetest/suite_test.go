package nodetest

import (
	"context"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

func TestMemSinkPassesSuite(t *testing.T) {
	recs := []node.Record{{Key: "a", Value: cty.StringVal("1")}, {Key: "b", Value: cty.StringVal("2")}, {Key: "c", Value: cty.StringVal("3")}}
	for _, shape := range []node.Shape{node.ShapeKeyed, node.ShapeDocument, node.ShapeAppend} {
		RunTargetSuite(t, func(t *testing.T) node.Target {
			s := NewMemSink()
			s.AppendOnly, s.Document = shape == node.ShapeAppend, shape == node.ShapeDocument
			tg, err := s.Open(context.Background(), node.Env{}, node.ModeRun)
			if err != nil {
				t.Fatal(err)
			}
			return tg
		}, recs)
	}
}
