package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/pipeline/pipeline/engine/node"
)

// Update implements node.Target: one server-side apply per entry, at most
// max_in_flight at once. The body is the entry's applied configuration
// plus the annotation recording it; a status target applies to the status
// subresource. Each failure is set on its entry alone.
func (t *Target) Update(ctx context.Context, batch []node.Entry) {
	if t.plan {
		failAll(batch, errPlan)
		return
	}
	m, err := t.resource()
	if err != nil {
		failAll(batch, err)
		return
	}
	sv := t.survey(ctx, m, batch)
	t.each(batch, func(e *node.Entry) { e.Err = t.apply(ctx, m, *e, sv) })
}

// each runs f on every entry of batch with max_in_flight goroutines.
func (t *Target) each(batch []node.Entry, f func(e *node.Entry)) {
	n := min(t.s.inFlight, len(batch))
	if n <= 1 {
		for i := range batch {
			f(&batch[i])
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range n {
		wg.Go(func() {
			for i := range next {
				f(&batch[i])
			}
		})
	}
	for i := range batch {
		next <- i
	}
	close(next)
	wg.Wait()
}

// apply writes one entry and records the result for explain and audit.
func (t *Target) apply(ctx context.Context, m *meta.RESTMapping, e node.Entry, sv survey) error {
	ns, name := splitKey(e.Key)
	body, err := t.body(e)
	if err != nil {
		return err
	}
	force := t.s.force
	opts := metav1.PatchOptions{FieldManager: t.s.manager, Force: &force}
	var sub []string
	if t.s.status {
		sub = []string{"status"}
	}
	ctx, cancel := context.WithTimeout(ctx, t.s.timeout)
	defer cancel()
	if err := t.claim(ctx, t.client(m, ns), e.Key, name, sv); err != nil {
		t.record(e.Key, result{op: "apply", at: time.Now(), err: err.Error()})
		return err
	}
	got, err := t.client(m, ns).Patch(ctx, name, types.ApplyPatchType, body, opts, sub...)
	if err != nil && !force && isFieldConflict(err) && t.handEdited(ctx, m, ns, name, err) {
		// A field we applied was changed by an update (kubectl edit, a
		// replace): drift, which a level-triggered sink restores. A
		// conflict with another applier stays an error.
		t.env.Logger.Info("restoring fields changed by hand", "key", e.Key, "err", err)
		force = true
		got, err = t.client(m, ns).Patch(ctx, name, types.ApplyPatchType, body, opts, sub...)
	}
	r := result{op: "apply", at: time.Now()}
	if err != nil {
		err = t.classify("apply", e.Key, err)
		r.err = err.Error()
		t.record(e.Key, r)
		return err
	}
	r.resourceVersion = got.GetResourceVersion()
	if !t.s.status {
		t.setMine(e.Key, true)
	}
	for _, o := range got.GetOwnerReferences() {
		r.owner = fmt.Sprintf("%s %s (uid %s)", o.Kind, o.Name, o.UID)
	}
	t.record(e.Key, r)
	t.env.Decide(node.Decision{Kind: node.DecisionObjectApplied, Node: t.env.Address,
		Detail: fmt.Sprintf("applied %s %s", t.s.obj.gvk.Kind, e.Key),
		Attrs:  map[string]string{"key": e.Key, "kind": t.s.obj.gvk.Kind, "resource_version": r.resourceVersion}})
	return nil
}

// handEdited reports whether every field an apply conflicted on (the
// conflict's status causes name them) is held by managers that hold
// their fields of the object through updates only (kubectl edit,
// replace, a client's Update), never through an apply of their own: such
// a change is drift from what the sink applied, not another owner's
// intent. The owners come from the live object's managedFields.
func (t *Target) handEdited(ctx context.Context, m *meta.RESTMapping, ns, name string, conflict error) bool {
	var fields []string
	if st, ok := conflict.(apierrors.APIStatus); ok && st.Status().Details != nil {
		for _, c := range st.Status().Details.Causes {
			if c.Type == metav1.CauseTypeFieldManagerConflict && c.Field != "" {
				fields = append(fields, c.Field)
			}
		}
	}
	if len(fields) == 0 {
		return false
	}
	live, err := t.client(m, ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	return editedOnly(live.GetManagedFields(), t.s.manager, fields)
}

// editedOnly reports whether each of fields (paths as a conflict's causes
// write them: .spec.ports[port=80,protocol="TCP"].targetPort) is held by
// some manager other than self, and only through updates.
func editedOnly(entries []metav1.ManagedFieldsEntry, self string, fields []string) bool {
	held := map[string]bool{} // field -> held by an update only (false: by an apply too)
	for _, mf := range entries {
		if mf.Manager == self || mf.FieldsV1 == nil || mf.Subresource != "" {
			continue
		}
		fs := &fieldpath.Set{}
		if fs.FromJSON(mf.FieldsV1.GetRawReader()) != nil {
			return false
		}
		update := mf.Operation != metav1.ManagedFieldsOperationApply
		for _, f := range fields {
			if !hasPath(fs, f) {
				continue
			}
			if was, seen := held[f]; !seen || was {
				held[f] = update
			}
		}
	}
	for _, f := range fields {
		if !held[f] {
			return false
		}
	}
	return true
}

// hasPath reports whether fs holds the path written p.
func hasPath(fs *fieldpath.Set, p string) bool {
	for path := range fs.All() {
		if path.String() == p {
			return true
		}
	}
	return false
}

// body is what an apply sends: the entry's applied configuration.
func (t *Target) body(e node.Entry) ([]byte, error) { return e.Data, nil }

// classify wraps a failed request's error: a conflict with another
// applier names the other manager (the server's message does); a
// permanent answer (see permanent) is counted as a rejection, logged
// with the server's message and marked node.Rejected, so the sink loop
// writes it again only when the object changes or at the next resync.
// Anything else (429, 5xx, a timeout, a
// precondition conflict) is transient: the sink loop retries it.
func (t *Target) classify(op string, key node.Key, err error) error {
	switch {
	case op == "apply" && isFieldConflict(err):
		t.conflicts.Inc()
		t.env.Logger.Warn("apply conflicts with another field manager", "key", key, "err", err)
		return fmt.Errorf("%s %s: another field manager owns a field with another value (set force_conflicts = true to take it over): %w", op, key, err)
	case t.permanent(op, err):
		t.rejected.Inc()
		t.env.Logger.Warn("object rejected by the API server", "key", key, "err", err)
		return node.Rejected(fmt.Errorf("%s %s: rejected by the API server: %w", op, key, err))
	}
	return fmt.Errorf("%s %s: %w", op, key, err)
}

// isFieldConflict reports a server-side apply conflict: a 409 whose status
// causes name fields another manager applied. A 409 without such causes
// (a precondition that no longer holds) is worth retrying.
func isFieldConflict(err error) bool {
	if !apierrors.IsConflict(err) {
		return false
	}
	return apierrors.HasStatusCause(err, metav1.CauseTypeFieldManagerConflict)
}

// permanent reports an answer that the same request will get again: the
// object is too large (413), invalid (422) or malformed (400), denied by
// admission, the verb is not allowed on the resource (405), or the
// media type is not served (406, 415). A 404 of an apply says that the
// resource type is not served (an apply creates a missing object), except
// for the status subresource, whose object may be created later.
func (t *Target) permanent(op string, err error) bool {
	switch {
	case apierrors.IsRequestEntityTooLargeError(err), apierrors.IsInvalid(err), apierrors.IsBadRequest(err),
		apierrors.IsMethodNotSupported(err), apierrors.IsNotAcceptable(err), apierrors.IsUnsupportedMediaType(err), isDenied(err):
		return true
	case apierrors.IsNotFound(err):
		return op == "apply" && !t.s.status
	}
	return false
}

// isDenied reports an admission denial answered as Forbidden (a webhook,
// or a ValidatingAdmissionPolicy with reason Forbidden), as opposed to a
// request our own permissions do not allow.
func isDenied(err error) bool {
	if !apierrors.IsForbidden(err) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "admission") || strings.Contains(msg, "denied the request") || strings.Contains(msg, "ValidatingAdmissionPolicy")
}

// Delete implements node.Target. An object is deleted only when it still
// carries the owner label (its UID and resourceVersion are preconditions,
// so one relabelled in between stays); a missing object is deleted already.
// A status target releases the status fields it set instead.
func (t *Target) Delete(ctx context.Context, batch []node.Entry) {
	if t.plan {
		failAll(batch, errPlan)
		return
	}
	m, err := t.resource()
	if err != nil {
		failAll(batch, err)
		return
	}
	t.each(batch, func(e *node.Entry) {
		if t.s.status {
			e.Err = t.release(ctx, m, e.Key)
		} else {
			e.Err = t.delete(ctx, m, e.Key)
		}
	})
}

func (t *Target) delete(ctx context.Context, m *meta.RESTMapping, key node.Key) error {
	ns, name := splitKey(key)
	ctx, cancel := context.WithTimeout(ctx, t.s.timeout)
	defer cancel()
	c := t.client(m, ns)
	o, err := c.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		t.setMine(key, false)
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete %s: read: %w", key, err)
	}
	if !t.owns(o) {
		// Relabelled since it was listed, or never the sink's (the label
		// copied by hand): another's object, left alone.
		reason := t.notOwned(o)
		t.noteForeign(key, reason)
		t.setMine(key, false)
		t.env.Logger.Info("object not deleted: not the sink's", "key", key, "reason", reason)
		return nil
	}
	uid, rv := o.GetUID(), o.GetResourceVersion()
	err = c.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	r := result{op: "delete", at: time.Now(), resourceVersion: rv}
	if err != nil {
		err = t.classify("delete", key, err)
		r.err = err.Error()
		t.record(key, r)
		return err
	}
	t.record(key, r)
	t.setMine(key, false)
	t.env.Decide(node.Decision{Kind: node.DecisionObjectDeleted, Node: t.env.Address,
		Detail: fmt.Sprintf("deleted %s %s", t.s.obj.gvk.Kind, key),
		Attrs:  map[string]string{"key": key, "kind": t.s.obj.gvk.Kind, "resource_version": rv}})
	return nil
}

// release applies an empty status, which gives up every status field the
// sink's field manager owns. An object that is gone took its status with
// it: nothing is left to release.
func (t *Target) release(ctx context.Context, m *meta.RESTMapping, key node.Key) error {
	ns, name := splitKey(key)
	md := map[string]any{"name": name}
	if ns != "" {
		md["namespace"] = ns
	}
	gvk := t.s.obj.gvk
	body, _ := json.Marshal(map[string]any{"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind, "metadata": md})
	err := t.apply(ctx, m, node.Entry{Key: key, Data: body}, nil)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func splitKey(k node.Key) (ns, name string) {
	for i := 0; i < len(k); i++ {
		if k[i] == '/' {
			return k[:i], k[i+1:]
		}
	}
	return "", k
}

func failAll(batch []node.Entry, err error) {
	for i := range batch {
		batch[i].Err = err
	}
}
