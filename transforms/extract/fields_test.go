package extract

import (
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// fieldsObj is a packed object that answers attribute paths without being
// built (fastexpr.Fields), as the kubernetes source's packed objects do,
// and counts its builds.
type fieldsObj struct {
	v      cty.Value
	builds *int
}

// Value builds the object anew, level by level, as a source's packed
// form does.
func (f fieldsObj) Value() cty.Value { *f.builds++; return rebuild(f.v) }

func rebuild(v cty.Value) cty.Value {
	if v.IsNull() || !v.Type().IsObjectType() {
		return v
	}
	attrs := make(map[string]cty.Value, len(v.Type().AttributeTypes()))
	for n := range v.Type().AttributeTypes() {
		attrs[n] = rebuild(v.GetAttr(n))
	}
	return cty.ObjectVal(attrs)
}

// builtObj is a packed object with no fields to read: it is built.
type builtObj struct{ f fieldsObj }

func (b builtObj) Value() cty.Value        { return b.f.Value() }
func (b builtObj) Same(o node.Packed) bool { return false }

func (f fieldsObj) Same(o node.Packed) bool {
	g, ok := o.(fieldsObj)
	return ok && f.v.RawEquals(g.v)
}

func (f fieldsObj) Field(path []string) (cty.Value, bool) {
	v := f.v
	for _, n := range path {
		if v.IsNull() || !v.Type().IsObjectType() || !v.Type().HasAttribute(n) {
			return cty.NilVal, false
		}
		v = v.GetAttr(n)
	}
	return v, true
}

// TestEvalOnFields: extract evaluates a packed object through its fields
// and builds it only where the fast path cannot answer, with the records
// it yields from the built object.
func TestEvalOnFields(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		pod        node.Record
		builds     int
	}{
		{"flagship", "where = try(object.status.podIP, \"\") != \"\"\nkey = object.status.podIP", pod(t, "a", "Running", "10.0.0.1"), 0},
		{"flagship with the README's value", "where = try(object.status.podIP, \"\") != \"\"\nkey = object.status.podIP\n" +
			"value = { pod = object.metadata.name, namespace = object.metadata.namespace }", pod(t, "a", "Running", "10.0.0.1"), 0},
		{"no podIP: try needs HCL", "where = try(object.status.podIP, \"\") != \"\"\nkey = object.status.podIP", pod(t, "b", "Pending"), 1},
		{"a function", "key = upper(object.status.phase)", pod(t, "a", "Running", "10.0.0.1"), 1},
		{"for_each", podIPs, pod(t, "a", "Running", "10.0.0.1", "10.0.0.2"), 0},
		{"the whole object", "key = object.metadata.name\nvalue = object", pod(t, "a", "Running", "10.0.0.1"), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := nodetest.MustBuild(t, Spec(), "input = source.kubernetes.pods\n"+tc.body, objects).Transform.(*Transform)
			want, err := newEvaluator(tr).eval(tc.pod.Key, tc.pod.Value)
			if err != nil {
				t.Fatal(err)
			}
			builds := 0
			got, err := newEvaluator(tr).eval(tc.pod.Key, node.PackedVal(fieldsObj{v: tc.pod.Value, builds: &builds}))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("yields %v, want %v", got, want)
			}
			for i := range want {
				if got[i].key != want[i].key || !node.Unpack(got[i].value).RawEquals(node.Unpack(want[i].value)) {
					t.Errorf("yield %d: %v, want %v", i, got[i], want[i])
				}
			}
			if builds != tc.builds {
				t.Errorf("the object was built %d times, want %d", builds, tc.builds)
			}
		})
	}
}
