package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pipeline/pipeline/engine/node"
)

const podJSON = `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-1","namespace":"shop","uid":"u1",
 "resourceVersion":"7","labels":{"app":"web","tier":"a\"b"},"managedFields":[{"manager":"x","fieldsV1":{"f:a":{}}}]},
 "spec":{"nodeName":"n1","containers":[{"name":"c","ports":[{"containerPort":80}]}],"priority":7,"ratio":0.5},
 "status":{"phase":"Running","podIP":"10.0.0.7","podIPs":[{"ip":"10.0.0.7"},{"ip":"fd00::7"}],"ok":true,"none":null,
 "msg":"esc\u00e9\n"}}`

// project returns what reading paths of obj should give: the full decode
// cut down to the paths.
func project(full map[string]any, p *node.Paths) map[string]any {
	out := map[string]any{}
	for k, v := range full {
		sub, ok := p.Field(k)
		if !ok {
			continue
		}
		if m, isObj := v.(map[string]any); isObj && !sub.Whole() {
			out[k] = project(m, sub)
			continue
		}
		out[k] = v
	}
	return out
}

func paths(ps ...string) *node.Paths {
	p := &node.Paths{}
	for _, s := range ps {
		p.Add(strings.Split(strings.TrimPrefix(s, "."), ".")...)
	}
	return p
}

func TestProjectorObject(t *testing.T) {
	full, err := decodeExact([]byte(podJSON))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*node.Paths{
		paths(".status.podIP", ".metadata.name"),
		paths(".status.podIPs", ".metadata.labels", ".spec"),
		paths(".status.msg", ".status.none", ".status.ok", ".spec.priority", ".spec.ratio"),
		paths(".status.podIP.deeper", ".nothing.here"),
		node.WholeObject(),
	} {
		got, end, err := projector{data: []byte(podJSON)}.object(0, p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if end != len(podJSON) {
			t.Errorf("%s: ended at %d of %d", p, end, len(podJSON))
		}
		if diff := cmp.Diff(project(full, p), got); diff != "" {
			t.Errorf("%s (-want +got)\n%s", p, diff)
		}
	}
}

func TestDecodeProjectedList(t *testing.T) {
	raw := `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"42"},"items":[` + podJSON + `,
		{"metadata":{"name":"b","namespace":"shop"},"status":{}}]}`
	l, err := decodeList([]byte(raw), paths(".status.podIP", ".metadata.name", ".metadata.namespace"))
	if err != nil {
		t.Fatal(err)
	}
	if l.GetResourceVersion() != "42" || len(l.Items) != 2 {
		t.Fatalf("rv %q, %d items", l.GetResourceVersion(), len(l.Items))
	}
	want := map[string]any{"kind": "Pod", "apiVersion": "v1", "status": map[string]any{},
		"metadata": map[string]any{"name": "b", "namespace": "shop"}}
	if diff := cmp.Diff(want, l.Items[1].Object); diff != "" {
		t.Errorf("kind and apiVersion come from the list (-want +got)\n%s", diff)
	}
	for _, bad := range []string{`{"items":[1]}`, `{"items":`, `{"items":[{"a":}]}`, `{"items":[{"a":"x}]}`, `[`, ``, `{"items":[{"a" 1}]}`} {
		if _, err := decodeList([]byte(bad), paths(".a")); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzProjector checks that projecting never panics and, on valid JSON
// objects, agrees with decoding everything and cutting it down.
func FuzzProjector(f *testing.F) {
	f.Add([]byte(podJSON), ".status.podIP .metadata")
	f.Add([]byte(`{"a":{"b":[1,{"c":"\\"}]},"d":"x"}`), ".a.b .d")
	f.Add([]byte(`{"a":1e5,"b":-0.5,"c":[]}`), ".a .c")
	f.Fuzz(func(t *testing.T, data []byte, spec string) {
		p := &node.Paths{}
		for _, s := range strings.Fields(spec) {
			p.Add(strings.Split(strings.Trim(s, "."), ".")...)
		}
		got, _, err := projector{data: data}.object(0, p)
		if full, ferr := decodeExact(data); json.Valid(data) && ferr == nil && full != nil {
			if err != nil {
				t.Fatalf("valid object rejected: %v", err)
			}
			if diff := cmp.Diff(project(full, p), got); diff != "" {
				t.Fatalf("(-want +got)\n%s", diff)
			}
		}
	})
}

// decodeList decodes a list body through the decoder For picks, as the
// source reads a list.
func decodeList(raw []byte, proj *node.Paths) (*unstructured.UnstructuredList, error) {
	r := bufio.NewReader(bytes.NewReader(raw))
	list := &unstructured.UnstructuredList{}
	head, err := For(r, nil, proj).List(func(obj map[string]any) error {
		list.Items = append(list.Items, unstructured.Unstructured{Object: obj})
		return nil
	})
	if err != nil {
		return nil, err
	}
	list.Object = head
	return list, nil
}

func TestDecodeList(t *testing.T) {
	raw := `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"42"},"items":[
		{"metadata":{"name":"a","namespace":"shop"},"spec":{"priority":7,"ratio":0.5,"big":18446744073709551615,"fine":0.10000000000000000001,"e":1e3}},
		{"kind":"Pod","apiVersion":"v1","metadata":{"name":"b"}}]}`
	l, err := decodeList([]byte(raw), nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.GetResourceVersion() != "42" || len(l.Items) != 2 {
		t.Fatalf("list rv %q, %d items", l.GetResourceVersion(), len(l.Items))
	}
	a := l.Items[0]
	if a.GetKind() != "Pod" || a.GetAPIVersion() != "v1" {
		t.Errorf("item kind %q apiVersion %q, want them from the list", a.GetKind(), a.GetAPIVersion())
	}
	spec := a.Object["spec"].(map[string]any)
	want := map[string]any{"priority": int64(7), "ratio": json.Number("0.5"),
		"big": json.Number("18446744073709551615"), "fine": json.Number("0.10000000000000000001"), "e": json.Number("1e3")}
	if diff := cmp.Diff(want, spec); diff != "" {
		t.Errorf("numbers must decode as int64 or their exact text (-want +got)\n%s", diff)
	}
	for _, bad := range []string{`{"items":[1]}`, `{"items":`} {
		if _, err := decodeList([]byte(bad), nil); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// decodeExact decodes a JSON object whole, as the projector promises to:
// integers in int64's range as int64, every other number as its text.
func decodeExact(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data")
	}
	var fix func(any) any
	fix = func(v any) any {
		switch x := v.(type) {
		case json.Number:
			if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
				return n
			}
		case map[string]any:
			for k, e := range x {
				x[k] = fix(e)
			}
		case []any:
			for i, e := range x {
				x[i] = fix(e)
			}
		}
		return v
	}
	m, _ := fix(v).(map[string]any)
	return m, nil
}
