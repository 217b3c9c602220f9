package kubernetes

import (
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// covers reports whether live still holds every field of want (what the
// sink applied): maps may hold more keys (defaults, other managers'
// fields), lists must have as many elements, and scalars must be equal
// (numbers as numbers).
func covers(live, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			lv, ok := l[k]
			if !ok || !covers(lv, wv) {
				return false
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(w) {
			return false
		}
		for i := range w {
			if !covers(l[i], w[i]) {
				return false
			}
		}
		return true
	case float64:
		return number(live) == w && isNumber(live)
	case int64:
		return number(live) == float64(w) && isNumber(live)
	default:
		return live == want
	}
}

func isNumber(v any) bool {
	switch v.(type) {
	case float64, int64, int, int32:
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
