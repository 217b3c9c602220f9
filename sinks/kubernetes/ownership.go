package kubernetes

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/pipeline/pipeline/engine/node"
)

// owns reports whether o is the sink's: it carries the sink's identity
// (owner_label = owner_value) and its managedFields hold an entry of the
// sink's field manager. The label alone is not enough: anyone can copy a
// label by hand, and an object the sink never wrote is never its to
// delete.
func (t *Target) owns(o *unstructured.Unstructured) bool {
	return o.GetLabels()[t.s.label] == t.s.value && t.managed(o)
}

// managed reports whether the sink's field manager holds fields of o.
func (t *Target) managed(o *unstructured.Unstructured) bool {
	for _, f := range o.GetManagedFields() {
		if f.Manager == t.s.manager {
			return true
		}
	}
	return false
}

// notOwned says why o is not the sink's, for errors, logs and explain.
func (t *Target) notOwned(o *unstructured.Unstructured) string {
	what := fmt.Sprintf("%s %s exists and is not owned by %s=%s", t.s.obj.gvk.Kind, keyOf(o.GetNamespace(), o.GetName()), t.s.label, t.s.value)
	switch v, ok := o.GetLabels()[t.s.label]; {
	case ok && v == t.s.value:
		return what + fmt.Sprintf(" (it carries the label, but field manager %s never wrote it)", t.s.manager)
	case ok && v == legacyOwnerValue(t.s.name) && t.managed(o):
		return what + fmt.Sprintf(" (it carries %s=%s, the default identity of earlier versions: relabel it, see the migration in the sink's documentation)", t.s.label, v)
	case ok:
		return what + fmt.Sprintf(" (%s=%s)", t.s.label, v)
	}
	return what
}

// mine reports whether the sink knows key as its own: listed as owned by
// the last Actual, or written by the sink since.
func (t *Target) mine(key node.Key) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.owned[key]
}

func (t *Target) setMine(key node.Key, owned bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if owned {
		t.owned[key] = true
		delete(t.foreign, key)
	} else {
		delete(t.owned, key)
	}
}

// claim checks, before the apply of key, that the object is the sink's
// or absent: an object that exists and is not the sink's is never applied
// over silently. With adopt it is taken over (logged); without, the apply
// of that object fails naming its owner. A key the sink knows as its own
// costs no request.
func (t *Target) claim(ctx context.Context, c dynamic.ResourceInterface, key node.Key, name string) error {
	if t.s.status || t.mine(key) {
		return nil
	}
	o, err := c.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("apply %s: read: %w", key, err)
	case t.owns(o):
		return nil
	case t.s.adopt:
		t.env.Logger.Info("adopting object", "key", key, "reason", t.notOwned(o))
		return nil
	}
	reason := t.notOwned(o)
	t.noteForeign(key, reason)
	return fmt.Errorf("apply %s: %s; set adopt = true to take it over", key, reason)
}

// noteForeign records why key is left alone, for explain.
func (t *Target) noteForeign(key node.Key, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.foreign[key] = reason
}
