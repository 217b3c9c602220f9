package kubernetes

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/ctyconv"
)

// projectedValue is what a projected record's value must be: the fields
// of obj that reads covers, converted, objects below read fields kept as
// objects of their read fields, anything else converted whole. It is the
// straightforward conversion the packed form replaces.
func projectedValue(obj map[string]any, reads *node.Paths) (cty.Value, error) {
	attrs := map[string]cty.Value{}
	for f, v := range obj {
		below, ok := reads.Field(f)
		if !ok {
			continue
		}
		var err error
		if m, isMap := v.(map[string]any); isMap && !below.Whole() {
			attrs[f], err = projectedValue(m, below)
		} else {
			attrs[f], err = ctyconv.ToCty(v)
		}
		if err != nil {
			return cty.NilVal, err
		}
	}
	return cty.ObjectVal(attrs), nil
}

var fieldNames = []string{"a", "b", "status", "podIP", "spec", "x"}

// randomObject makes a JSON-like object a few levels deep, with nulls,
// empty maps, lists and scalars where other objects hold maps.
func randomObject(r *rand.Rand, depth int) map[string]any {
	obj := map[string]any{}
	for _, f := range fieldNames {
		if r.IntN(3) == 0 {
			continue
		}
		switch k := r.IntN(8); {
		case k < 3 && depth > 0:
			obj[f] = randomObject(r, depth-1)
		case k == 3:
			obj[f] = nil
		case k == 4:
			obj[f] = []any{"p", int64(r.IntN(3))}
		case k == 5:
			obj[f] = map[string]any{}
		case k == 6:
			obj[f] = float64(r.IntN(4))
		default:
			obj[f] = fmt.Sprintf("v%d", r.IntN(3))
		}
	}
	return obj
}

// randomReads reads a few random paths, some of them whole subtrees.
func randomReads(r *rand.Rand) *node.Paths {
	p := &node.Paths{}
	for range 1 + r.IntN(4) {
		path := make([]string, 1+r.IntN(3))
		for i := range path {
			path[i] = fieldNames[r.IntN(len(fieldNames))]
		}
		p.Add(path...)
	}
	return p
}

// TestPackedValue checks the packed form against the straightforward
// conversion on random objects and projections: the value it builds, and
// Same against equality of values.
func TestPackedValue(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		reads := randomReads(r)
		sh := newShape(reads)
		a, b := randomObject(r, 3), randomObject(r, 3)
		if i%3 == 0 {
			b = a // equal objects must pack the same
		}
		pa, err := sh.pack(a)
		if err != nil {
			t.Fatalf("pack %v: %v", a, err)
		}
		pb, err := sh.pack(b)
		if err != nil {
			t.Fatalf("pack %v: %v", b, err)
		}
		want, err := projectedValue(a, reads)
		if err != nil {
			t.Fatal(err)
		}
		if got := pa.Value(); !got.RawEquals(want) {
			t.Fatalf("reads %s of %v:\n got %#v\nwant %#v", reads, a, got, want)
		}
		for range 4 { // Field answers a path as the built value does, or not at all
			path := make([]string, 1+r.IntN(3))
			for j := range path {
				path[j] = fieldNames[r.IntN(len(fieldNames))]
			}
			v, ok := pa.Field(path)
			if w, has := attrPath(want, path); ok && (!has || !v.RawEquals(w)) {
				t.Fatalf("reads %s of %v: Field(%v) = %#v, the value has %#v (%v)", reads, a, path, v, w, has)
			}
			if attrPathOK(want, path) && sh.covers(path) && !ok {
				t.Fatalf("reads %s of %v: Field(%v) did not answer", reads, a, path)
			}
		}
		wantB, _ := projectedValue(b, reads)
		if same, eq := pa.Same(pb), want.RawEquals(wantB); same != eq {
			t.Fatalf("reads %s: Same = %v, values equal = %v\na %v\nb %v", reads, same, eq, a, b)
		}
	}
}

// attrPath follows attribute names through objects.
func attrPath(v cty.Value, path []string) (cty.Value, bool) {
	for _, n := range path {
		if v.IsNull() || !v.Type().IsObjectType() || !v.Type().HasAttribute(n) {
			return cty.NilVal, false
		}
		v = v.GetAttr(n)
	}
	return v, true
}

// attrPathOK: the path ends at a value through objects only, none of them
// converted whole (where Field may decline).
func attrPathOK(v cty.Value, path []string) bool {
	_, ok := attrPath(v, path)
	return ok
}

// covers: the path runs through the shape's levels (the last step may
// be read whole).
func (sh *shape) covers(path []string) bool {
	for i, n := range path {
		j := slices.IndexFunc(sh.fields, func(f shapeField) bool { return f.name == n })
		if j < 0 {
			return false
		}
		if sh = sh.fields[j].below; sh == nil && i < len(path)-1 {
			return false
		}
	}
	return true
}

func TestPackedLabels(t *testing.T) {
	reads := &node.Paths{}
	reads.Add("metadata", "labels", "app")
	sh := newShape(reads)
	p, err := sh.pack(map[string]any{"metadata": map[string]any{"labels": map[string]string{"app": "web", "tier": "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := cty.ObjectVal(map[string]cty.Value{"metadata": cty.ObjectVal(map[string]cty.Value{
		"labels": cty.ObjectVal(map[string]cty.Value{"app": cty.StringVal("web")})})})
	if got := p.Value(); !got.RawEquals(want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
}

func TestPackedSameOtherShape(t *testing.T) {
	reads := &node.Paths{}
	reads.Add("a")
	obj := map[string]any{"a": "1"}
	p1, _ := newShape(reads).pack(obj)
	p2, _ := newShape(reads).pack(obj)
	if p1.Same(p2) {
		t.Fatal("packed values of two shapes compare as the same (a source's shape is its own)")
	}
	if !p1.Same(p1) {
		t.Fatal("a packed value differs from itself")
	}
}

func TestPackedUnconvertible(t *testing.T) {
	reads := &node.Paths{}
	reads.Add("a")
	if _, err := newShape(reads).pack(map[string]any{"a": struct{}{}}); err == nil {
		t.Fatal("a value of an unsupported Go type packed without error")
	}
}

// BenchmarkRecordValue compares what a projected pod costs at rest and to
// build: the packed form, and the cty value it replaces.
func BenchmarkRecordValue(b *testing.B) {
	reads := &node.Paths{}
	reads.Add("status", "podIP")
	sh := newShape(reads)
	obj := map[string]any{"status": map[string]any{"podIP": "10.0.3.7", "phase": "Running"}}
	b.Run("pack", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := sh.pack(obj); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cty", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := projectedValue(obj, reads); err != nil {
				b.Fatal(err)
			}
		}
	})
	p, _ := sh.pack(obj)
	b.Run("build", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = p.Value()
		}
	})
	path := []string{"status", "podIP"}
	b.Run("field", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := p.Field(path); !ok {
				b.Fatal("no status.podIP")
			}
		}
	})
}

// pack converts the fields of obj that sh covers into a packed value.
func (sh *shape) pack(obj map[string]any) (*packed, error) {
	p := &packed{sh: sh, slots: make([]any, sh.slots)}
	return p, sh.fill(obj, p.slots)
}
