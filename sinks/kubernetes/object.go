package kubernetes

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/ctyconv"
	"github.com/pipeline/pipeline/schema"
)

// objectExpr is the object attribute with what validate learnt of it: the
// constant apiVersion and kind (and namespace, when constant).
type objectExpr struct {
	expr           hcl.Expression
	gvk            kschema.GroupVersionKind
	namespace      string // "" when absent or computed per record
	namespaceRange hcl.Range
	// clusterScoped: metadata is a constructor that sets no namespace.
	clusterScoped bool
}

// checkObject checks what can be checked before any record exists: the
// expression is an object constructor whose apiVersion and kind are
// constant and whose metadata sets a name.
func checkObject(expr hcl.Expression, ctx *hcl.EvalContext) (objectExpr, hcl.Diagnostics) {
	o := objectExpr{expr: expr}
	bad := func(summary, detail string, rng hcl.Range) hcl.Diagnostics {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}}
	}
	cons, ok := expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		return o, bad("Invalid object", "object must be an object constructor, { apiVersion = \"v1\", kind = \"ConfigMap\", metadata = { name = ... }, ... }, so that its kind is known before any record exists (for RBAC and for listing what the sink owns).", expr.Range())
	}
	items := consItems(cons, ctx)
	var diags hcl.Diagnostics
	constant := func(name string) (string, bool) {
		it, ok := items[name]
		if !ok {
			diags = append(diags, bad("Missing "+name, "object must set "+name+" to a constant string.", cons.SrcRange)...)
			return "", false
		}
		v, d := it.Value(ctx)
		if d.HasErrors() || !v.IsKnown() || v.IsNull() || v.Type() != cty.String || v.AsString() == "" {
			diags = append(diags, bad("Invalid "+name, name+" must be a constant, non-empty string (every object of a sink is of one kind); it may use var and local but not the record.", it.Range())...)
			return "", false
		}
		return v.AsString(), true
	}
	av, okA := constant("apiVersion")
	kind, okK := constant("kind")
	if okA {
		gv, err := kschema.ParseGroupVersion(av)
		if err != nil {
			diags = append(diags, bad("Invalid apiVersion", fmt.Sprintf("%s; write group/version (\"networking.k8s.io/v1\") or v1 for the core group.", err), items["apiVersion"].Range())...)
		} else if okK {
			o.gvk = gv.WithKind(kind)
		}
	}
	md, ok := items["metadata"]
	if !ok {
		return o, append(diags, bad("Missing metadata", "object must set metadata = { name = ... }.", cons.SrcRange)...)
	}
	mcons, ok := md.(*hclsyntax.ObjectConsExpr)
	if !ok {
		return o, diags // computed metadata: checked per record
	}
	mitems := consItems(mcons, ctx)
	if _, ok := mitems["name"]; !ok {
		diags = append(diags, bad("Missing metadata.name", "metadata must set name.", mcons.SrcRange)...)
	}
	if ns, ok := mitems["namespace"]; ok {
		if v, d := ns.Value(ctx); !d.HasErrors() && v.IsKnown() && !v.IsNull() && v.Type() == cty.String {
			o.namespace, o.namespaceRange = v.AsString(), ns.Range()
		}
	} else {
		o.clusterScoped = true
	}
	return o, diags
}

// checkOwnerNamespace checks owner_reference against the object where both
// namespaces are known before any record exists (constants in object
// constructors): an owner in a namespace must be in the object's own. The
// same rule is checked per record when the sink builds an object.
func checkOwnerNamespace(owner hcl.Expression, o objectExpr, ctx *hcl.EvalContext) hcl.Diagnostics {
	cons, ok := owner.(*hclsyntax.ObjectConsExpr)
	if !ok {
		return nil
	}
	md, ok := consItems(cons, ctx)["metadata"].(*hclsyntax.ObjectConsExpr)
	if !ok {
		return nil
	}
	nsExpr, ok := consItems(md, ctx)["namespace"]
	if !ok {
		return nil
	}
	v, d := nsExpr.Value(ctx)
	if d.HasErrors() || !v.IsKnown() || v.IsNull() || v.Type() != cty.String || v.AsString() == "" {
		return nil // computed per record: checked then
	}
	ns := v.AsString()
	var detail string
	switch {
	case o.clusterScoped:
		detail = fmt.Sprintf("The owner is in namespace %q and the object sets no namespace: a cluster-scoped object can only be owned by a cluster-scoped object.", ns)
	case o.namespace != "" && o.namespace != ns:
		detail = fmt.Sprintf("The owner is in namespace %q and the object in %q: an owner must be in its object's namespace (or cluster-scoped).", ns, o.namespace)
	default:
		return nil
	}
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Owner in another namespace",
		Detail:  detail + " The API server's garbage collector treats such an owner as missing and deletes the object. Write the object in the owner's namespace, or drop owner_reference.",
		Subject: nsExpr.Range().Ptr()}}
}

// consItems maps an object constructor's constant keys to their values.
func consItems(cons *hclsyntax.ObjectConsExpr, ctx *hcl.EvalContext) map[string]hclsyntax.Expression {
	out := map[string]hclsyntax.Expression{}
	for _, it := range cons.Items {
		k, d := it.KeyExpr.Value(ctx)
		if d.HasErrors() || !k.IsKnown() || k.IsNull() || k.Type() != cty.String {
			continue
		}
		out[k.AsString()] = it.ValueExpr
	}
	return out
}

// checkLabel checks owner_label and owner_value as Kubernetes checks labels.
func checkLabel(key, value string, c *schema.Content) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		_, rng, _ := labelAttr.Get(c)
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid owner_label",
			Detail: fmt.Sprintf("%q is not a label key: %s.", key, errs[0]), Subject: rng.Ptr()})
	}
	if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
		_, rng, _ := valueAttr.Get(c)
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid owner_value",
			Detail: fmt.Sprintf("%q is not a label value: %s. Set owner_value to at most 63 letters, digits, '-', '_' or '.'.", value, errs[0]), Subject: rng.Ptr()})
	}
	return diags
}

// built is one record's object: the applied configuration as JSON-like Go
// values and its canonical bytes (sorted keys), which are what the sink
// compares.
type built struct {
	key       node.Key
	obj       map[string]any
	data      []byte
	sensitive bool
}

// build evaluates the object expression for r and adds what the sink
// owns: the owner label and the ownerReference.
func (s *Sink) build(r node.Record) (built, error) {
	ctx := s.ctx.NewChild()
	rec := cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(r.Key), "value": r.Value})
	ctx.Variables = map[string]cty.Value{"record": rec}
	v, diags := s.obj.expr.Value(ctx)
	if diags.HasErrors() {
		return built{}, fmt.Errorf("object: %s", diags.Error())
	}
	raw, sensitive := ctyconv.FromCtyMarked(v)
	obj, ok := dropNulls(raw).(map[string]any)
	if !ok {
		return built{}, fmt.Errorf("object is %s, not an object", v.Type().FriendlyName())
	}
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		return built{}, errors.New("object has no metadata")
	}
	name, _ := md["name"].(string)
	if name == "" {
		return built{}, errors.New("object's metadata.name is empty or not a string")
	}
	ns, _ := md["namespace"].(string)
	if len(s.namespaces) > 0 && !contains(s.namespaces, ns) {
		return built{}, fmt.Errorf("object %s is in namespace %q, not one of namespaces", name, ns)
	}
	if !s.status {
		labels, _ := md["labels"].(map[string]any)
		if labels == nil {
			labels = map[string]any{}
			md["labels"] = labels
		}
		labels[s.label] = s.value
		if s.ownerRef != nil {
			ref, err := s.ownerReference(ctx, ns, name)
			if err != nil {
				return built{}, err
			}
			refs, _ := md["ownerReferences"].([]any)
			md["ownerReferences"] = append(refs, ref)
		}
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return built{}, fmt.Errorf("encode object: %w", err)
	}
	return built{key: keyOf(ns, name), obj: obj, data: data, sensitive: sensitive}, nil
}

// ownerReference evaluates owner_reference into an ownerReferences entry
// of the object ns/name (ns "" when cluster-scoped). An owner in a
// namespace must be in ns: the API server's garbage collector deletes an
// object whose owner is elsewhere.
func (s *Sink) ownerReference(ctx *hcl.EvalContext, ns, name string) (map[string]any, error) {
	v, diags := s.ownerRef.Value(ctx)
	if diags.HasErrors() {
		return nil, fmt.Errorf("owner_reference: %s", diags.Error())
	}
	o, _ := ctyconv.FromCty(v).(map[string]any)
	md, _ := o["metadata"].(map[string]any)
	ref := map[string]any{"apiVersion": o["apiVersion"], "kind": o["kind"], "controller": true}
	if md != nil {
		ref["name"], ref["uid"] = md["name"], md["uid"]
	}
	for _, f := range []string{"apiVersion", "kind", "name", "uid"} {
		if s, _ := ref[f].(string); s == "" {
			return nil, fmt.Errorf("owner_reference has no %s (it needs apiVersion, kind, metadata.name and metadata.uid)", f)
		}
	}
	if ons, _ := md["namespace"].(string); ons != "" && ons != ns {
		where := "is cluster-scoped"
		if ns != "" {
			where = fmt.Sprintf("is in namespace %q", ns)
		}
		return nil, fmt.Errorf("%s %s %s: its owner_reference %s %s is in namespace %q; an owner must be in its object's namespace or cluster-scoped (the garbage collector would delete the object)",
			s.obj.gvk.Kind, keyOf(ns, name), where, ref["kind"], ref["name"], ons)
	}
	return ref, nil
}

// keyOf is the key of the object ns/name: name alone when cluster-scoped.
func keyOf(ns, name string) node.Key {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// dropNulls removes null object attributes: a null in an applied
// configuration would ask the server to remove a field. It also gives a
// number kept as its exact text (json.Number, beyond what a float64
// holds) as the float64 the API server keeps of it, so that the object
// read back is not drift forever.
func dropNulls(v any) any {
	switch x := v.(type) {
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
	case map[string]any:
		for k, e := range x {
			if e == nil {
				delete(x, k)
				continue
			}
			x[k] = dropNulls(e)
		}
	case []any:
		for i, e := range x {
			x[i] = dropNulls(e)
		}
	}
	return v
}

// entryOf is the one place an Entry is built: Data holds the canonical
// applied configuration, Value the object for views and config tests.
func entryOf(key node.Key, data []byte, sensitive bool) node.Entry {
	v := decodeValue(data)
	if sensitive {
		v = schema.MarkSensitive(v)
	}
	return node.Entry{Key: key, Value: v, Data: data}
}

func decodeValue(data []byte) cty.Value {
	var x any
	if err := json.Unmarshal(data, &x); err != nil {
		return cty.StringVal(string(data))
	}
	return toValue(x, data)
}

// toValue is x (data decoded) as a cty value; data as a string when x
// has no cty form.
func toValue(x any, data []byte) cty.Value {
	v, err := ctyconv.ToCty(x)
	if err != nil {
		return cty.StringVal(string(data))
	}
	return v
}
