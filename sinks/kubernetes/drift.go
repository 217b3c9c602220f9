package kubernetes

import (
	"encoding/json"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// covers reports whether live still holds every field of want (what the
// sink applied): maps may hold more keys (defaults, other managers'
// fields), and scalars must be equal (numbers as numbers). fs is the
// sink's field set from managedFields (FieldsV1), nil when unknown: it
// says, as the API server does, which lists are associative. Elements of
// an associative list (k:{...} in fs, such as containers by name) are
// matched by key and a set (v:...) by value, so an element another
// manager added is not drift; other lists must have as many elements,
// compared in order.
func covers(live, want any, fs map[string]any) bool {
	switch w := want.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			lv, ok := l[k]
			if !ok || !covers(lv, wv, sub(fs, "f:"+k)) {
				return false
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok {
			return false
		}
		if keyed(fs) {
			return coversElements(l, w, fs)
		}
		if len(l) != len(w) {
			return false
		}
		for i := range w {
			if !covers(l[i], w[i], nil) {
				return false
			}
		}
		return true
	case float64:
		return number(live) == w && isNumber(live)
	case json.Number:
		return number(live) == number(w) && isNumber(live)
	case int64:
		return number(live) == float64(w) && isNumber(live)
	default:
		return live == want
	}
}

// coversElements matches each wanted element of an associative list or a
// set to a live element: by the key fields its k:{...} entry in fs names,
// by value for a v:... entry, and else to any live element that covers
// it. Live elements no wanted one matches belong to other managers.
func coversElements(live, want []any, fs map[string]any) bool {
	for _, w := range want {
		found := false
		for path, f := range fs {
			switch {
			case strings.HasPrefix(path, "k:"):
				var key map[string]any
				if json.Unmarshal([]byte(path[2:]), &key) != nil || !covers(w, key, nil) {
					continue
				}
				for _, l := range live {
					if covers(l, key, nil) {
						found = covers(l, w, asMap(f))
						break
					}
				}
			case strings.HasPrefix(path, "v:"):
				var v any
				if json.Unmarshal([]byte(path[2:]), &v) != nil || !covers(w, v, nil) || !covers(v, w, nil) {
					continue
				}
				for _, l := range live {
					if covers(l, w, nil) {
						found = true
						break
					}
				}
			default:
				continue
			}
			break
		}
		if !found {
			for _, l := range live {
				if covers(l, w, nil) {
					found = true
					break
				}
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// keyed reports whether fs names list elements by key or value: the API
// server records an associative list's or a set's elements so.
func keyed(fs map[string]any) bool {
	for k := range fs {
		if strings.HasPrefix(k, "k:") || strings.HasPrefix(k, "v:") {
			return true
		}
	}
	return false
}

func sub(fs map[string]any, k string) map[string]any {
	if fs == nil {
		return nil
	}
	return asMap(fs[k])
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// appliedFields is the field set manager last applied to o (its
// managedFields entry of operation Apply on the object itself), nil when
// there is none.
func appliedFields(o *unstructured.Unstructured, manager string) map[string]any {
	for _, mf := range o.GetManagedFields() {
		if mf.Manager != manager || mf.Operation != metav1.ManagedFieldsOperationApply || mf.Subresource != "" || mf.FieldsV1 == nil {
			continue
		}
		var set map[string]any
		if json.Unmarshal(mf.FieldsV1.GetRawBytes(), &set) != nil {
			return nil
		}
		return set
	}
	return nil
}

func isNumber(v any) bool {
	switch v.(type) {
	case float64, int64, int, int32, json.Number:
		return true
	}
	return false
}

func number(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	case int:
		return float64(x)
	case int32:
		return float64(x)
	case json.Number:
		f, _ := x.Float64()
		return f
	}
	return 0
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
	for _, mf := range o.GetManagedFields() {
		if mf.Manager != manager || mf.Subresource != "status" || mf.FieldsV1 == nil {
			continue
		}
		var set map[string]any
		if json.Unmarshal(mf.FieldsV1.GetRawBytes(), &set) != nil {
			return nil, false
		}
		fs, _ := set["f:status"].(map[string]any)
		st, _ := o.Object["status"]
		owned, ok := extract(st, fs)
		if !ok {
			return nil, false
		}
		out := statusOnly(map[string]any{"apiVersion": o.GetAPIVersion(), "kind": o.GetKind(),
			"metadata": map[string]any{"name": o.GetName(), "namespace": o.GetNamespace()}, "status": owned})
		if o.GetNamespace() == "" {
			delete(out["metadata"].(map[string]any), "namespace")
		}
		data, err := json.Marshal(out)
		return data, err == nil
	}
	return nil, false
}

// extract returns the parts of v that the field set fs (FieldsV1) names: a
// field set with no members but "." owns v whole (a leaf, an atomic list
// or map). Lists are kept whole when any element is owned.
func extract(v any, fs map[string]any) (any, bool) {
	children := false
	for k := range fs {
		if k != "." {
			children = true
			break
		}
	}
	m, isMap := v.(map[string]any)
	if !children || !isMap {
		return v, v != nil
	}
	out := map[string]any{}
	for k, sub := range fs {
		name, ok := strings.CutPrefix(k, "f:")
		if !ok {
			continue
		}
		cv, present := m[name]
		if !present {
			continue
		}
		subset, _ := sub.(map[string]any)
		if x, ok := extract(cv, subset); ok {
			out[name] = x
		}
	}
	return out, len(out) > 0
}
