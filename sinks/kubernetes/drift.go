package kubernetes

import (
	"encoding/json"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// owned is the part of o that manager's field set fs holds (its
// managedFields entry, FieldsV1), with apiVersion, kind, name and
// namespace, which the API server leaves out of every field set: what
// the sink last applied, as the API server keeps it. The fields another
// manager took over (a hand edit moves a field to its editor) are not in
// fs, so an object edited by hand reads as another entry; the fields and
// list elements another manager added are not there either, so they are
// never drift.
func owned(o *unstructured.Unstructured, fs *fieldpath.Set) map[string]any {
	out, _ := pick(o.Object, fs).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	out["apiVersion"], out["kind"] = o.GetAPIVersion(), o.GetKind()
	md, _ := out["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		out["metadata"] = md
	}
	md["name"] = o.GetName()
	if ns := o.GetNamespace(); ns != "" {
		md["namespace"] = ns
	}
	// Written by earlier versions, which recorded the applied body there;
	// the next apply of the object drops it.
	if ann, _ := md["annotations"].(map[string]any); ann[legacyAppliedAnnotation] != nil {
		ann = maps.Clone(ann) // it may be the live object's, when owned whole
		delete(ann, legacyAppliedAnnotation)
		md["annotations"] = ann
		if len(ann) == 0 {
			delete(md, "annotations")
		}
	}
	return out
}

// legacyAppliedAnnotation is where earlier versions kept the body they
// applied; the field sets of managedFields replace it.
const legacyAppliedAnnotation = "pipeline.io/applied"

// pick returns the parts of v that fs names, as the API server's field
// sets name them: a map's fields by name (f:), an associative list's
// elements by their key fields (k:{...}), a set's by value (v:), others
// by index (i:). A member with no children (a leaf, an atomic list or
// map, an element owned whole) is taken whole. List elements keep their
// order in v.
func pick(v any, fs *fieldpath.Set) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		each(fs, func(pe fieldpath.PathElement, children *fieldpath.Set) {
			if pe.FieldName == nil {
				return
			}
			if fv, ok := x[*pe.FieldName]; ok {
				out[*pe.FieldName] = pickChild(fv, children)
			}
		})
		return out
	case []any:
		out := []any{}
		for i, e := range x {
			each(fs, func(pe fieldpath.PathElement, children *fieldpath.Set) {
				if matches(pe, i, e) {
					out = append(out, pickChild(e, children))
				}
			})
		}
		return out
	}
	return v
}

// pickChild is v whole when fs names none of its parts, else those parts.
func pickChild(v any, children *fieldpath.Set) any {
	if children == nil || children.Empty() {
		return v
	}
	return pick(v, children)
}

// each calls f with every path element fs holds at its top level (a
// member, or the parent of members) and the set below it (nil: none).
func each(fs *fieldpath.Set, f func(pe fieldpath.PathElement, children *fieldpath.Set)) {
	seen := fieldpath.PathElementSet{}
	fs.Children.Iterate(func(pe fieldpath.PathElement) {
		c, _ := fs.Children.Get(pe)
		seen.Insert(pe)
		f(pe, c)
	})
	fs.Members.Iterate(func(pe fieldpath.PathElement) {
		if !seen.Has(pe) {
			f(pe, nil)
		}
	})
}

// matches reports whether list element e, at index i, is the one pe
// names: by its key fields, its value or its index.
func matches(pe fieldpath.PathElement, i int, e any) bool {
	switch {
	case pe.Key != nil:
		m, ok := e.(map[string]any)
		if !ok {
			return false
		}
		for _, f := range *pe.Key {
			ev, ok := m[f.Name]
			if !ok || !value.Equals(value.NewValueInterface(ev), f.Value) {
				return false
			}
		}
		return true
	case pe.Value != nil:
		return value.Equals(value.NewValueInterface(e), *pe.Value)
	case pe.Index != nil:
		return *pe.Index == i
	}
	return false
}

// fieldSet is the field set of o's managedFields entry of manager on
// subresource sub ("" for the object itself) whose operation is op (""
// for any), nil when there is none or it cannot be read.
func fieldSet(o metav1.Object, manager, sub string, op metav1.ManagedFieldsOperationType) *fieldpath.Set {
	for _, mf := range o.GetManagedFields() {
		if mf.Manager != manager || mf.Subresource != sub || (op != "" && mf.Operation != op) || mf.FieldsV1 == nil {
			continue
		}
		fs := &fieldpath.Set{}
		if fs.FromJSON(mf.FieldsV1.GetRawReader()) != nil {
			return nil
		}
		return fs
	}
	return nil
}

// statusOnly keeps what a status apply may send: apiVersion, kind, name,
// namespace and status.
func statusOnly(obj map[string]any) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	keep := map[string]any{"name": md["name"]}
	if ns, ok := md["namespace"]; ok {
		keep["namespace"] = ns
	}
	out := map[string]any{"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": keep}
	if st, ok := obj["status"]; ok {
		out["status"] = st
	}
	return out
}

// ownedStatus is the status part of o that manager owns (its managedFields
// entry for the status subresource), in statusOnly's form; ok is false
// when the manager owns nothing there.
func ownedStatus(o *unstructured.Unstructured, manager string) ([]byte, bool) {
	fs := fieldSet(o, manager, "status", "")
	if fs == nil {
		return nil, false
	}
	st, ok := owned(o, fs)["status"].(map[string]any)
	if !ok || len(st) == 0 {
		return nil, false
	}
	out := statusOnly(map[string]any{"apiVersion": o.GetAPIVersion(), "kind": o.GetKind(),
		"metadata": map[string]any{"name": o.GetName(), "namespace": o.GetNamespace()}, "status": st})
	if o.GetNamespace() == "" {
		delete(out["metadata"].(map[string]any), "namespace")
	}
	data, err := json.Marshal(out)
	return data, err == nil
}
