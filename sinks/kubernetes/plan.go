package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/pipeline/pipeline/engine/node"
)

// Describe implements node.Describer: the kind, where and by which label.
func (t *Target) Describe() node.TargetInfo {
	where := "every namespace"
	if len(t.s.namespaces) > 0 {
		where = "namespaces " + strings.Join(t.s.namespaces, ", ")
	}
	what := fmt.Sprintf("%s objects labelled %s=%s", t.s.obj.gvk.Kind, t.s.label, t.s.value)
	if t.s.status {
		what = fmt.Sprintf("status of %s objects (field manager %s)", t.s.obj.gvk.Kind, t.s.manager)
	}
	return node.TargetInfo{Location: what + " in " + where, Kind: "kubernetes_objects", Exists: true}
}

// Show implements node.Describer: the applied configuration as JSON.
func (t *Target) Show(e node.Entry) string { return string(e.Data) }

// DryRun implements node.DryRunner: the server-side apply of e with
// dryRun=All, compared field by field with the object as it is, so
// defaulting, the schema check and admission are the API server's own.
// An object that exists and is not the sink's is refused as apply
// refuses it (claim), or adopted with adopt = true.
func (t *Target) DryRun(ctx context.Context, e node.Entry) (node.DryRun, error) {
	var out node.DryRun
	m, err := t.resource()
	if err != nil {
		return out, err
	}
	ns, name := splitKey(e.Key)
	ctx, cancel := context.WithTimeout(ctx, t.s.timeout)
	defer cancel()
	c := t.client(m, ns)
	var before map[string]any
	live, err := c.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil && !t.s.status && !t.owns(live) && !t.s.adopt:
		out.Refused = t.notOwned(live) + "; set adopt = true to take it over"
		return out, nil
	case err == nil:
		before = live.Object
		if !t.s.status && !t.owns(live) {
			out.Adopts = t.notOwned(live)
		}
	case !apierrors.IsNotFound(err):
		return out, fmt.Errorf("read %s: %w", e.Key, err)
	case t.s.status:
		return out, fmt.Errorf("%s %s does not exist: a status sink creates nothing", t.s.obj.gvk.Kind, e.Key)
	}
	body, err := t.body(e)
	if err != nil {
		return out, err
	}
	force := t.s.force
	opts := metav1.PatchOptions{FieldManager: t.s.manager, Force: &force, DryRun: []string{metav1.DryRunAll}}
	var sub []string
	if t.s.status {
		sub = []string{"status"}
	}
	after, err := c.Patch(ctx, name, types.ApplyPatchType, body, opts, sub...)
	if err != nil && !force && isFieldConflict(err) && t.handEdited(ctx, m, ns, name, err) {
		// As apply does: fields changed by an update are restored.
		force = true
		after, err = c.Patch(ctx, name, types.ApplyPatchType, body, opts, sub...)
	}
	if err != nil {
		return out, t.classifyQuiet(err)
	}
	out.Lines = fieldDiff(before, after.Object)
	return out, nil
}

// classifyQuiet says why a dry run fails, without counting it.
func (t *Target) classifyQuiet(err error) error {
	switch {
	case isFieldConflict(err):
		return fmt.Errorf("conflict with another field manager (force_conflicts = false): %w", err)
	case t.permanent("apply", err):
		return fmt.Errorf("rejected by the API server: %w", err)
	}
	return err
}

// ignored are the fields the API server maintains on every write: a diff
// of them says nothing about the change.
var ignored = map[string]bool{
	"metadata.managedFields": true, "metadata.resourceVersion": true, "metadata.uid": true,
	"metadata.creationTimestamp": true, "metadata.generation": true,
}

// fieldDiff lists the fields that differ between two objects, one line per
// field path, sorted: "+ path = value", "~ path: old => new", "- path".
// Lists compare whole.
func fieldDiff(before, after map[string]any) []string {
	b, a := map[string]any{}, map[string]any{}
	flatten("", before, b)
	flatten("", after, a)
	var out []string
	for p, av := range a {
		bv, ok := b[p]
		switch {
		case ignored[p]:
		case !ok:
			out = append(out, fmt.Sprintf("+ %s = %s", p, jsonText(av)))
		case jsonText(av) != jsonText(bv):
			out = append(out, fmt.Sprintf("~ %s: %s => %s", p, jsonText(bv), jsonText(av)))
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok && !ignored[p] {
			out = append(out, "- "+p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][2:] < out[j][2:] })
	return out
}

func flatten(prefix string, v any, out map[string]any) {
	m, ok := v.(map[string]any)
	if !ok || (len(m) == 0 && prefix != "") {
		out[prefix] = v
		return
	}
	for k, e := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		flatten(p, e, out)
	}
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Explain implements node.Explainer: the object's kind and resource,
// the result of the last write and its owner.
func (t *Target) Explain(k node.Key) []string {
	out := []string{fmt.Sprintf("object %s %s (field manager %s)", t.s.obj.gvk.Kind, k, t.s.manager)}
	t.mu.Lock()
	r, ok := t.results[k]
	why, foreign := t.foreign[k]
	t.mu.Unlock()
	if foreign {
		out = append(out, "not the sink's, so never applied over or deleted: "+why)
	}
	if !ok {
		return append(out, "last write: none since the sink started")
	}
	at := r.at.UTC().Format("2006-01-02T15:04:05Z")
	if r.err != "" {
		out = append(out, fmt.Sprintf("last %s: failed at %s: %s", r.op, at, r.err))
	} else {
		out = append(out, fmt.Sprintf("last %s: ok at %s, resourceVersion %s", r.op, at, r.resourceVersion))
	}
	if r.owner != "" {
		out = append(out, "owner "+r.owner)
	}
	return out
}

var (
	_ node.Describer = (*Target)(nil)
	_ node.DryRunner = (*Target)(nil)
	_ node.Explainer = (*Target)(nil)
)
