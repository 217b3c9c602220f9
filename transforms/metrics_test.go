package transforms_test

import (
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/transforms/aggregate"
	"github.com/pipeline/pipeline/transforms/extract"
	"github.com/pipeline/pipeline/transforms/filter"
)

// TestMetricsGatherTogether runs transforms that register metrics of the
// same names in one graph, as the engine does (each under its node
// label): one registry must gather them all, which Prometheus refuses
// when two families of one name differ in help text.
func TestMetricsGatherTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		up := &node.Upstream{Address: "source.static.x", Type: node.Records}
		for _, s := range []struct {
			spec node.Spec
			body string
		}{
			{extract.Spec(), "key = object.ip"},
			{filter.Spec(), "where = true"},
			{aggregate.Spec(), "for_each = records\nkey = each.value.key"},
		} {
			tr := nodetest.MustBuild(t, s.spec, "input = source.static.x\n"+s.body, up).Transform
			env, _ := nodetest.Env(t, reg)
			env.Metrics = prometheus.WrapRegistererWith(prometheus.Labels{"node": "transform." + s.spec.Type + ".t"}, reg)
			in := nodetest.NewInput(1)
			nodetest.RunTransform(t, tr, env, in, nodetest.NewOutput())
			in.Send(node.Event{Reset: true, Synced: true})
		}
		synctest.Wait()
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	})
}
