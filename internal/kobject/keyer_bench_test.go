package kobject

import "testing"

// BenchmarkKeyer times Keyer.Key on one pod for the default key, simple
// field paths and paths that walk lists and maps.
func BenchmarkKeyer(b *testing.B) {
	obj := pod()
	for _, bc := range []struct {
		name  string
		exprs []string
	}{
		{"default", nil},
		{"name", []string{"{.metadata.name}"}},
		{"namespace-name", []string{"{.metadata.namespace}", "{.metadata.name}"}},
		{"list", []string{"{.spec.containers[*].name}"}},
		{"map", []string{"{.metadata.labels.*}"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			k, errs := NewKeyer(bc.exprs)
			if errs != nil {
				b.Fatal(errs)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := k.Key(obj); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
