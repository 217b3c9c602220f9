package template

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// The fast path renders exactly what HCL renders, or gives up.
func TestFastMatchesHCL(t *testing.T) {
	entries := []node.Entry{
		{Key: "a", Value: cty.ObjectVal(map[string]cty.Value{"ip": cty.StringVal("10.0.0.1"), "port": cty.NumberIntVal(80), "up": cty.True, "w": cty.NumberFloatVal(1.5)})},
		{Key: "b", Value: cty.ObjectVal(map[string]cty.Value{"ip": cty.StringVal("10.0.0.2"), "port": cty.NumberIntVal(8080), "up": cty.False, "w": cty.NumberIntVal(2)})},
	}
	for _, tmpl := range []string{
		`"%{ for r in records }${r.key} ${r.value.ip}:${r.value.port}\n%{ endfor }"`,
		`"%{ for i, r in records }${i}=${r.value.up}%{ if r.value.up }+%{ else }-%{ endif }\n%{ endfor }"`,
		`"%{ for r in records }${r.value.w}%{ endfor }"`,         // a fraction: HCL formats it
		`"%{ for r in records }${upper(r.value.ip)}%{ endfor }"`, // a function: HCL
		`"x${length(records)}%{ for r in records }%{ if r.value.port == 80 }${r.key}%{ endif }%{ endfor }"`,
		`"%{ for r in records }${try(r.value.missing, "none")}%{ endfor }"`,
		`"%{ for r in records }${r.value["ip"]}%{ endfor }"`,
		`"%{ for r in records }%{ for s in records }${r.key}${s.key}${s.value.port},%{ endfor }%{ endfor }"`,
		`"%{ for r in records }%{ for r in [1, 2] }${r}%{ endfor }${r.key}%{ endfor }"`,
		`"%{ for r in records }${r.value.missing}%{ endfor }"`, // an error: both fail
		`"%{ for r in records }${r.value}%{ endfor }"`,         // an object: HCL's error
		`"%{ for k, v in {b = 1, a = 2} }${k}${v}%{ endfor }%{ for r in records ~} ${r.key} %{~ endfor }"`,
		`"%{ for r in records }%{ if r.value.up }${format("%5s", r.key)}%{ else }${r.value.nope}%{ endif }%{ endfor }"`,
		`"%{ for r in records }${r.value.w * 2}${jsonencode([r.key])}%{ endfor }"`,
		`"${upper("x")}"`,
		`<<-EOT
		%{ for r in records ~}
		  server ${r.key} ${r.value.ip}:${r.value.port}
		%{ endfor ~}
		EOT`,
	} {
		s := nodetest.MustBuild(t, Spec(), fmt.Sprintf("input = source.static.x\npath = \"/tmp/x\"\ntemplate = %s", tmpl), up).Sink.(*Sink)
		fast, ferr := s.render(entries)
		s.fast, s.fastPaths = nil, nil
		slow, serr := s.render(entries)
		if fmt.Sprint(ferr) != fmt.Sprint(serr) {
			t.Fatalf("%s: errors differ: fast %v, HCL %v", tmpl, ferr, serr)
		}
		if !bytes.Equal(fast.data, slow.data) {
			t.Errorf("%s:\nfast %q\nHCL  %q", tmpl, fast.data, slow.data)
		}
		// The streaming render (slow, above) writes what HCL's own
		// evaluation of the whole template gives.
		objs := make([]cty.Value, len(entries))
		for i, e := range entries {
			objs[i] = recordObject(e)
		}
		ctx := s.ctx.NewChild()
		ctx.Variables = map[string]cty.Value{"records": cty.TupleVal(objs)}
		v, diags := s.tmpl.Value(ctx)
		if diags.HasErrors() != (serr != nil) {
			t.Errorf("%s: HCL %v, streaming %v", tmpl, diags, serr)
		} else if serr == nil && v.AsString() != string(slow.data) {
			t.Errorf("%s:\nstreaming %q\nHCL       %q", tmpl, slow.data, v.AsString())
		}
	}
}
