package kubernetes

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// TestClassify: permanent answers are rejections (counted, named so);
// transient ones are neither rejections nor conflicts, so the loop
// retries them; a conflict is a field conflict by its status causes.
func TestClassify(t *testing.T) {
	gr := kschema.GroupResource{Resource: "configmaps"}
	fieldConflict := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 409,
		Reason: metav1.StatusReasonConflict, Message: "Apply failed with 1 conflict",
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict,
			Message: `conflict with "kubectl" using v1`, Field: ".data.x"}}}}}
	tests := []struct {
		name string
		op   string
		err  error
		want string // "rejected", "conflict" or "" (transient)
	}{
		{"413 too large", "apply", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), "rejected"},
		{"422 invalid", "apply", apierrors.NewInvalid(kschema.GroupKind{Kind: "ConfigMap"}, "a", nil), "rejected"},
		{"400 bad request", "apply", apierrors.NewBadRequest("bad"), "rejected"},
		{"405 not allowed", "apply", apierrors.NewMethodNotSupported(gr, "patch"), "rejected"},
		{"404 of an apply: type not served", "apply", apierrors.NewNotFound(gr, "a"), "rejected"},
		{"409 field conflict", "apply", fieldConflict, "conflict"},
		{"409 precondition", "delete", apierrors.NewConflict(gr, "a", errors.New("the object has been modified")), ""},
		{"409 without causes", "apply", apierrors.NewConflict(gr, "a", errors.New("the object has been modified")), ""},
		{"429", "apply", apierrors.NewTooManyRequests("slow down", 1), ""},
		{"500", "apply", apierrors.NewInternalError(errors.New("etcd")), ""},
		{"503", "apply", apierrors.NewServiceUnavailable("down"), ""},
		{"504 timeout", "apply", apierrors.NewTimeoutError("timeout", 1), ""},
		{"our own RBAC", "apply", apierrors.NewForbidden(gr, "a", errors.New("no patch")), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, _ := nodetest.Env(t, nil)
			s, _ := build(t, netpol)
			tg := &Target{s: s, env: env,
				rejected:  prometheus.NewCounter(prometheus.CounterOpts{Name: "r"}),
				conflicts: prometheus.NewCounter(prometheus.CounterOpts{Name: "c"})}
			err := tg.classify(tt.op, "ns/a", tt.err)
			got := ""
			switch {
			case testutil.ToFloat64(tg.rejected) == 1:
				got = "rejected"
			case testutil.ToFloat64(tg.conflicts) == 1:
				got = "conflict"
			}
			if got != tt.want {
				t.Errorf("classified %q, want %q: %v", got, tt.want, err)
			}
			if (got == "rejected") != strings.Contains(err.Error(), "rejected by the API server") {
				t.Errorf("message: %v", err)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("%v does not wrap the server's error", err)
			}
		})
	}
}
