package kubernetes

import "testing"

func TestNoun(t *testing.T) {
	for _, c := range []struct{ resource, kind, want string }{
		{"pods", "", "pod"}, {"endpointslices", "", "endpointslice"}, {"ingresses", "", "ingress"},
		{"networkpolicies", "", "networkpolicy"}, {"", "ConfigMap", "configmap"},
	} {
		s := &Source{target: target{resource: c.resource, kind: c.kind}}
		if got := s.Noun(); got != c.want {
			t.Errorf("Noun of %q/%q = %q, want %q", c.resource, c.kind, got, c.want)
		}
	}
}
