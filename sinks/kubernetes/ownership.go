package kubernetes

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/pipeline/pipeline/engine/node"
)

// owns reports whether o is the sink's: it carries the sink's identity
// (owner_label = owner_value) and its managedFields hold an entry of the
// sink's field manager. The label alone is not enough: anyone can copy a
// label by hand, and an object the sink never wrote is never its to
// delete.
func (t *Target) owns(o metav1.Object) bool {
	return o.GetLabels()[t.s.label] == t.s.value && t.managed(o)
}

// managed reports whether the sink's field manager holds fields of o.
func (t *Target) managed(o metav1.Object) bool {
	for _, f := range o.GetManagedFields() {
		if f.Manager == t.s.manager {
			return true
		}
	}
	return false
}

// notOwned says why o is not the sink's, for errors, logs and explain.
func (t *Target) notOwned(o metav1.Object) string {
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
// costs no request, one in a surveyed namespace neither; others cost a GET.
func (t *Target) claim(ctx context.Context, c dynamic.ResourceInterface, key node.Key, name string, sv survey) error {
	if t.s.status || t.mine(key) {
		return nil
	}
	var o metav1.Object
	if found, ok := sv.lookup(key); ok {
		if found == nil {
			return nil
		}
		o = found
	} else {
		live, err := c.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("apply %s: read: %w", key, err)
		}
		o = live
	}
	switch {
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

// surveyMin is the number of keys of one namespace, unknown to the sink,
// from which one Update lists the namespace's objects (metadata only)
// instead of reading each object: a first apply into a namespace, where
// every object is new, then costs one request more rather than twice as
// many.
const surveyMin = 32

// survey holds, per namespace listed, the objects there by key: the
// namespaces Update surveyed before its applies.
type survey map[string]map[node.Key]*metav1.PartialObjectMetadata

// lookup returns key's object (nil when absent) and whether its
// namespace was surveyed.
func (sv survey) lookup(key node.Key) (*metav1.PartialObjectMetadata, bool) {
	ns, _ := splitKey(key)
	objs, ok := sv[ns]
	if !ok {
		return nil, false
	}
	return objs[key], true
}

// survey lists the metadata of the objects in each namespace where batch
// holds at least surveyMin keys the sink does not know as its own. A
// namespace whose LIST fails is left out: its keys are read one by one.
func (t *Target) survey(ctx context.Context, m *meta.RESTMapping, batch []node.Entry) survey {
	if t.s.status || t.meta == nil {
		return nil
	}
	unknown := map[string]int{}
	for _, e := range batch {
		if !t.mine(e.Key) {
			ns, _ := splitKey(e.Key)
			unknown[ns]++
		}
	}
	sv := survey{}
	for ns, n := range unknown {
		if n < surveyMin {
			continue
		}
		r := t.meta.Resource(m.Resource)
		var c metadata.ResourceInterface = r
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			c = r.Namespace(ns)
		}
		lctx, cancel := context.WithTimeout(ctx, 4*t.s.timeout)
		list, err := c.List(lctx, metav1.ListOptions{})
		cancel()
		if err != nil {
			t.env.Logger.Debug("survey failed; reading objects one by one", "namespace", ns, "err", err)
			continue
		}
		objs := make(map[node.Key]*metav1.PartialObjectMetadata, len(list.Items))
		for i := range list.Items {
			o := &list.Items[i]
			objs[keyOf(o.GetNamespace(), o.GetName())] = o
		}
		sv[ns] = objs
	}
	return sv
}

// noteForeign records why key is left alone, for explain.
func (t *Target) noteForeign(key node.Key, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.foreign[key] = reason
}
