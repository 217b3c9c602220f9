package kubernetes

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
	"github.com/pipeline/pipeline/sources/kubernetes/wire"
)

// The schema check: for a built-in resource the Go API types say which
// fields an object can have, so a path an expression reads that no
// version of the resource has (object.status.podIp for podIP) is a
// warning at that expression, where otherwise it would silently read as
// absent. Custom resources are not checked.

// schemaTypes returns the Go types of the objects the target names, one
// per served version the client knows, and a name for messages; none for
// a resource the client does not know. Results are kept: the scheme is
// fixed, and a configuration names the same few resources many times.
func (t target) schemaTypes() ([]reflect.Type, string) {
	k := schemaKey{t.resource, t.group, t.version, t.apiVersion, t.kind}
	if r, ok := schemaTypeCache.Load(k); ok {
		r := r.(schemaTypesResult)
		return r.types, r.name
	}
	types, name := t.findSchemaTypes()
	if schemaTypeCached.Add(1) <= maxSchemaTypeCache { // names come from configs: bounded
		schemaTypeCache.Store(k, schemaTypesResult{types, name})
	}
	return types, name
}

const maxSchemaTypeCache = 1024

var schemaTypeCached atomic.Int64

type schemaKey struct{ resource, group, version, apiVersion, kind string }

type schemaTypesResult struct {
	types []reflect.Type
	name  string
}

var schemaTypeCache sync.Map // schemaKey -> schemaTypesResult

func (t target) findSchemaTypes() ([]reflect.Type, string) {
	var gv kschema.GroupVersion
	if t.kind != "" {
		var err error
		if gv, err = kschema.ParseGroupVersion(t.apiVersion); err != nil {
			return nil, ""
		}
	}
	var types []reflect.Type
	var name string
	for gvk, typ := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		if t.kind != "" {
			if gvk.Kind != t.kind || gvk.GroupVersion() != gv {
				continue
			}
		} else {
			plural, singular := meta.UnsafeGuessKindToResource(gvk)
			if plural.Resource != t.resource && singular.Resource != t.resource {
				continue
			}
			if t.group != "" && gvk.Group != t.group || t.version != "" && gvk.Version != t.version {
				continue
			}
		}
		if _, isObject := reflect.New(typ).Interface().(runtime.Object); !isObject {
			continue
		}
		types = append(types, typ)
		name = gvk.Kind
	}
	slices.SortFunc(types, func(a, b reflect.Type) int { return strings.Compare(a.String(), b.String()) })
	return types, name
}

// checkSchema warns about each path of p that no type of the target has.
func (s *Source) checkSchema(p *node.Paths) hcl.Diagnostics {
	types, kind := s.target.schemaTypes()
	if len(types) == 0 || p.Whole() {
		return nil
	}
	var diags hcl.Diagnostics
	walkMissing(types, p, nil, func(path []string, known []string, at []hcl.Range) {
		hint := ""
		if m := suggestField(path[len(path)-1], known); m != "" {
			hint = fmt.Sprintf(" Did you mean %q?", m)
		}
		detail := fmt.Sprintf("%s objects (%s) have no field .%s, so reading it always yields nothing (an error, or the fallback of try()).%s",
			kind, s.target.describe(), strings.Join(path, "."), hint)
		if len(at) == 0 {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Field not in the resource's schema", Detail: detail})
		}
		for i := range at {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Field not in the resource's schema",
				Detail: detail, Subject: &at[i]})
		}
	})
	return diags
}

// ObjectFields implements node.FieldLister from the Go API types the
// schema check reads: the fields objects of the resource have under path,
// less what ignore_fields removes; only the metadata with metadata_only.
func (s *Source) ObjectFields(path []string) []string {
	types, _ := s.target.schemaTypes()
	if s.opts.metadataOnly {
		if len(path) == 0 {
			return []string{"apiVersion", "kind", "metadata"}
		}
		if path[0] != "metadata" {
			return nil
		}
	}
	for _, f := range path {
		below, _, open := descend(types, f)
		if open {
			return nil
		}
		types = below
	}
	_, names, _ := descend(types, "")
	var out []string
	for _, n := range names {
		if !s.ignored(append(append([]string(nil), path...), n)) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ignored reports whether ignore_fields removes the field at path.
func (s *Source) ignored(path []string) bool {
	if s.pruner == nil {
		return false
	}
	for _, pre := range s.pruner.Prefixes() {
		if pre.Exact && slices.Equal(pre.Fields, path) {
			return true
		}
	}
	return false
}

// walkMissing calls missing for each path below p that none of types has,
// with the field names the types do have there and where it is read.
func walkMissing(types []reflect.Type, p *node.Paths, prefix []string, missing func(path, known []string, at []hcl.Range)) {
	for _, f := range p.Fields() {
		sub, _ := p.Field(f)
		path := append(append([]string(nil), prefix...), f)
		below, known, open := descend(types, f)
		switch {
		case open:
		case len(below) == 0:
			missing(path, known, rangesBelow(sub))
		case !sub.Whole():
			walkMissing(below, sub, path, missing)
		}
	}
}

// descend returns the types of field f of objects of types, the fields
// they have, and whether some type accepts anything there.
func descend(types []reflect.Type, f string) (below []reflect.Type, known []string, open bool) {
	for _, t := range types {
		c, names, ok, anything := child(t, f)
		known = append(known, names...)
		switch {
		case anything:
			open = true
		case ok:
			below = append(below, c)
		}
	}
	return below, known, open
}

// child returns the type of field f of objects of type t, the fields t
// has, whether it has f, and whether anything goes below t (a map key,
// raw JSON, an interface).
func child(t reflect.Type, f string) (c reflect.Type, names []string, ok, anything bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Interface:
		return nil, nil, false, true
	case t.Kind() == reflect.Map:
		return t.Elem(), nil, true, false
	case t.Kind() == reflect.Struct && wire.HasJSONForm(t):
		// Raw JSON holds anything; Time, Quantity and the like are scalars.
		n := t.Name()
		return nil, nil, false, n == "RawExtension" || n == "FieldsV1" || n == "JSON"
	case t.Kind() == reflect.Struct:
		fields := jsonFields(t)
		c, ok := fields[f]
		return c, slices.Collect(maps.Keys(fields)), ok, false
	}
	return nil, nil, false, false // a scalar or a list has no fields
}

var jsonFieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// jsonFields returns a struct's fields by JSON name, inlined structs'
// fields included.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := jsonFieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" || !sf.IsExported() {
			continue
		}
		if sf.Anonymous && name == "" || strings.Contains(","+opts+",", ",inline,") {
			ft := sf.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				maps.Copy(out, jsonFields(ft))
			}
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out[name] = sf.Type
	}
	jsonFieldCache.Store(t, out)
	return out
}

// rangesBelow returns where expressions read p or anything below it.
func rangesBelow(p *node.Paths) []hcl.Range {
	out := append([]hcl.Range(nil), p.Ranges()...)
	for _, f := range p.Fields() {
		sub, _ := p.Field(f)
		out = append(out, rangesBelow(sub)...)
	}
	return out
}

// suggestField returns the known field closest to f: the same name in
// another case, else a close spelling.
func suggestField(f string, known []string) string {
	for _, k := range known {
		if strings.EqualFold(k, f) {
			return k
		}
	}
	return schema.DidYouMean(f, known)
}
