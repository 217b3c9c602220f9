package template

import (
	"testing"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// TestTargetSuite: the template target passes the target contract as a
// document (node.Document): its writes reach the file at Commit.
func TestTargetSuite(t *testing.T) {
	recs := []node.Record{
		{Key: "web-a", Value: server("10.0.0.1", 80)},
		{Key: "web-b", Value: server("10.0.0.2", 80)},
		{Key: "web-c", Value: server("10.0.0.3", 8080)},
	}
	nodetest.RunTargetSuite(t, func(t *testing.T) node.Target { return open(t, serversTmpl).tg }, recs)
}
