package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/randfill"

	"github.com/pipeline/pipeline/engine/node"
)

// encodeBoth encodes a typed list as the API server does, in protobuf and
// in JSON. Built-in objects are stored as protobuf, so the server's JSON
// is that of the object decoded from protobuf (an empty list there is
// null).
func encodeBoth(t testing.TB, list runtime.Object, gvk kschema.GroupVersionKind) (pb, js []byte) {
	t.Helper()
	list.GetObjectKind().SetGroupVersionKind(gvk)
	s := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	var buf bytes.Buffer
	if err := s.Encode(list, &buf); err != nil {
		t.Fatalf("protobuf: %v", err)
	}
	stored, _, err := s.Decode(buf.Bytes(), nil, nil)
	if err != nil {
		t.Fatalf("protobuf decode: %v", err)
	}
	js, err = json.Marshal(stored)
	if err != nil {
		t.Fatalf("json: %v", err)
	}
	return buf.Bytes(), js
}

// decodeProtoList decodes a protobuf List response: its head (apiVersion,
// kind, metadata) and each item projected on p.
func decodeProtoList(b []byte, l *Layout, p *node.Paths) (map[string]any, []map[string]any, error) {
	var items []map[string]any
	head := map[string]any{}
	err := decodeProtoListStream(bytes.NewReader(b), l, p, head, func(obj map[string]any) error {
		items = append(items, obj)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return head, items, nil
}

// sameAsJSON checks that the protobuf decoder yields what the JSON
// decoder yields for every projection.
func sameAsJSON(t *testing.T, gvk kschema.GroupVersionKind, list runtime.Object, projections []*node.Paths) {
	t.Helper()
	l := LayoutFor(gvk)
	if l == nil {
		t.Fatalf("no protobuf layout for %s", gvk)
	}
	pb, js := encodeBoth(t, list, gvk.GroupVersion().WithKind(gvk.Kind+"List"))
	for _, p := range projections {
		wantHead, wantItems, err := projector{data: js}.list(p)
		if err != nil {
			t.Fatalf("json %s: %v", p, err)
		}
		gotHead, gotItems, err := decodeProtoList(pb, l, p)
		if err != nil {
			t.Fatalf("protobuf %s: %v", p, err)
		}
		if d := cmp.Diff(wantHead, gotHead); d != "" {
			t.Errorf("list head (-json +protobuf):\n%s", d)
		}
		if d := cmp.Diff(wantItems, gotItems); d != "" {
			t.Fatalf("projection %s (-json +protobuf):\n%s", p, d)
		}
	}
}

func TestProtobufSameAsJSONPod(t *testing.T) {
	seconds := int64(30)
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", UID: "u1", ResourceVersion: "7",
			Labels: map[string]string{"app": "web", "tier": `a"b`}, CreationTimestamp: metav1.Unix(1700000000, 5),
			Annotations:   map[string]string{"note": "é\n"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x", FieldsV1: metav1.NewFieldsV1(`{"f:a":{}}`)}}},
		Spec: corev1.PodSpec{NodeName: "n1", TerminationGracePeriodSeconds: &seconds,
			Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{ContainerPort: 80}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": resource.MustParse("500m")}}}},
			HostNetwork: true},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.7",
			PodIPs:     []corev1.PodIP{{IP: "10.0.0.7"}, {IP: "fd00::7"}},
			Conditions: []corev1.PodCondition{{Type: "Ready", Status: "True", LastTransitionTime: metav1.Unix(1700000001, 0)}}},
	}
	empty := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "42"}, Items: []corev1.Pod{pod, empty}}
	sameAsJSON(t, corev1.SchemeGroupVersion.WithKind("Pod"), list, []*node.Paths{
		paths(".status.podIP", ".metadata.name", ".metadata.namespace", ".metadata.uid", ".metadata.resourceVersion"),
		paths(".status.podIPs", ".metadata.labels", ".spec"),
		paths(".metadata.labels.app", ".metadata.labels.none", ".metadata.annotations"),
		paths(".metadata.creationTimestamp", ".metadata.deletionTimestamp", ".metadata.generation"),
		paths(".spec.nodeName", ".spec.hostNetwork", ".spec.terminationGracePeriodSeconds", ".spec.priority", ".spec.containers"),
		paths(".status.podIP.deeper", ".nothing.here", ".status.conditions", ".status.hostIP", ".status.startTime"),
		paths(".metadata.managedFields", ".spec.securityContext", ".spec.securityContext.runAsUser", ".status.qosClass"),
		paths(".metadata", ".status"),
		node.WholeObject(),
	})
}

// fill fills v with random values the API could hold: valid quantities,
// times with second precision on the wire, integer-or-strings of their
// declared type, raw JSON that is JSON.
func filler(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.3).NumElements(0, 2).MaxDepth(6).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewMilliQuantity(c.Int63n(100000), resource.DecimalSI)
		},
		func(tm *metav1.Time, c randfill.Continue) {
			if c.Intn(3) == 0 {
				*tm = metav1.Time{}
				return
			}
			*tm = metav1.Unix(1600000000+c.Int63n(1e8), c.Int63n(1e9))
		},
		func(tm *metav1.MicroTime, c randfill.Continue) {
			*tm = metav1.NewMicroTime(time.Unix(1600000000+c.Int63n(1e8), c.Int63n(1e9)))
		},
		func(d *metav1.Duration, c randfill.Continue) { d.Duration = time.Duration(c.Int63n(1e12)) },
		func(x *intstr.IntOrString, c randfill.Continue) {
			if c.Intn(2) == 0 {
				*x = intstr.FromInt32(c.Int31())
			} else {
				*x = intstr.FromString(fmt.Sprint("p", c.Intn(100)))
			}
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			if c.Intn(2) == 0 {
				r.Raw = []byte(fmt.Sprintf(`{"a":%d}`, c.Intn(10)))
			}
		},
		func(f *metav1.FieldsV1, c randfill.Continue) { f.SetRawString(`{"f:x":{}}`) },
		func(s *string, c randfill.Continue) {
			if c.Intn(4) == 0 {
				*s = ""
				return
			}
			*s = []string{"a", "web", "10.0.0.7", "é", `q"b`, "x\ny", "0"}[c.Intn(7)] + fmt.Sprint(c.Intn(3))
		},
		func(f *float64, c randfill.Continue) {
			*f = []float64{0, 1, 0.5, 1e8, 1e21, -3}[c.Intn(6)]
		},
	)
}

// randomPaths picks paths that exist in obj (and some that do not).
func randomPaths(rng *rand.Rand, obj map[string]any, n int) *node.Paths {
	p := &node.Paths{}
	for range n {
		var path []string
		cur := any(obj)
		for depth := 0; depth < 5; depth++ {
			m, ok := cur.(map[string]any)
			if !ok || len(m) == 0 {
				break
			}
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			k := keys[rng.Intn(len(keys))]
			if rng.Intn(8) == 0 {
				k = "absent"
			}
			path = append(path, k)
			cur = m[k]
			if rng.Intn(3) == 0 {
				break
			}
		}
		if len(path) > 0 {
			p.Add(path...)
		}
	}
	return p
}

// TestProtobufSameAsJSONRandom fills objects of several kinds at random
// and checks both decoders agree on random projections of them.
func TestProtobufSameAsJSONRandom(t *testing.T) {
	kinds := []struct {
		gvk  kschema.GroupVersionKind
		list func(f *randfill.Filler) runtime.Object
	}{
		{corev1.SchemeGroupVersion.WithKind("Pod"), func(f *randfill.Filler) runtime.Object {
			l := &corev1.PodList{Items: make([]corev1.Pod, 3)}
			for i := range l.Items {
				f.Fill(&l.Items[i])
				l.Items[i].TypeMeta = metav1.TypeMeta{}
			}
			return l
		}},
		{corev1.SchemeGroupVersion.WithKind("Service"), func(f *randfill.Filler) runtime.Object {
			l := &corev1.ServiceList{Items: make([]corev1.Service, 3)}
			for i := range l.Items {
				f.Fill(&l.Items[i])
				l.Items[i].TypeMeta = metav1.TypeMeta{}
			}
			return l
		}},
		{corev1.SchemeGroupVersion.WithKind("ConfigMap"), func(f *randfill.Filler) runtime.Object {
			l := &corev1.ConfigMapList{Items: make([]corev1.ConfigMap, 3)}
			for i := range l.Items {
				f.Fill(&l.Items[i])
				l.Items[i].TypeMeta = metav1.TypeMeta{}
			}
			return l
		}},
		{corev1.SchemeGroupVersion.WithKind("Node"), func(f *randfill.Filler) runtime.Object {
			l := &corev1.NodeList{Items: make([]corev1.Node, 2)}
			for i := range l.Items {
				f.Fill(&l.Items[i])
				l.Items[i].TypeMeta = metav1.TypeMeta{}
			}
			return l
		}},
		{appsv1.SchemeGroupVersion.WithKind("Deployment"), func(f *randfill.Filler) runtime.Object {
			l := &appsv1.DeploymentList{Items: make([]appsv1.Deployment, 2)}
			for i := range l.Items {
				f.Fill(&l.Items[i])
				l.Items[i].TypeMeta = metav1.TypeMeta{}
			}
			return l
		}},
		{discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), func(f *randfill.Filler) runtime.Object {
			l := &discoveryv1.EndpointSliceList{Items: make([]discoveryv1.EndpointSlice, 3)}
			for i := range l.Items {
				f.Fill(&l.Items[i])
				l.Items[i].TypeMeta = metav1.TypeMeta{}
			}
			return l
		}},
	}
	for _, k := range kinds {
		t.Run(k.gvk.Kind, func(t *testing.T) {
			for seed := range int64(40) {
				list := k.list(filler(seed))
				_, js := encodeBoth(t, list, k.gvk.GroupVersion().WithKind(k.gvk.Kind+"List"))
				_, items, err := projector{data: js}.list(node.WholeObject())
				if err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewSource(seed))
				ps := []*node.Paths{node.WholeObject()}
				for _, it := range items {
					ps = append(ps, randomPaths(rng, it, 1+rng.Intn(6)))
				}
				sameAsJSON(t, k.gvk, list, ps)
			}
		})
	}
}

// TestProtobufMalformed feeds truncated and corrupted lists: every one is
// an error or a list, never a panic.
func TestProtobufMalformed(t *testing.T) {
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	l := LayoutFor(gvk)
	list := &corev1.PodList{Items: make([]corev1.Pod, 2)}
	filler(1).Fill(&list.Items[0])
	filler(2).Fill(&list.Items[1])
	pb, _ := encodeBoth(t, list, corev1.SchemeGroupVersion.WithKind("PodList"))
	p := paths(".status.podIP", ".metadata.labels", ".spec.containers", ".metadata.creationTimestamp")
	for i := range len(pb) {
		_, _, _ = decodeProtoList(pb[:i], l, p)
		bad := bytes.Clone(pb)
		bad[i] ^= 0xff
		_, _, _ = decodeProtoList(bad, l, p)
	}
	if _, _, err := decodeProtoList([]byte("{}"), l, p); err == nil || !strings.Contains(err.Error(), "envelope") {
		t.Fatalf("JSON as protobuf: %v", err)
	}
}

// FuzzProtobufDecode feeds the protobuf decoder arbitrary bytes, as a
// list response and as a watch stream, seeded with a real pod list and
// watch frame: every input is an error or a result, never a panic.
func FuzzProtobufDecode(f *testing.F) {
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	l := LayoutFor(gvk)
	list := &corev1.PodList{Items: make([]corev1.Pod, 2)}
	filler(1).Fill(&list.Items[0])
	filler(2).Fill(&list.Items[1])
	pb, _ := encodeBoth(f, list, corev1.SchemeGroupVersion.WithKind("PodList"))
	f.Add(pb)
	f.Add(watchFrame(f, "ADDED", &list.Items[0]))
	p := paths(".status.podIP", ".metadata.labels", ".spec.containers", ".metadata.creationTimestamp")
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = decodeProtoList(b, l, p)
		w := &protoDecoder{r: bufio.NewReader(bytes.NewReader(b)), pb: l, proj: p}
		for {
			if _, _, err := w.Event(); err != nil {
				break
			}
		}
	})
}

func TestLayoutFor(t *testing.T) {
	for _, gvk := range []kschema.GroupVersionKind{
		corev1.SchemeGroupVersion.WithKind("Pod"), corev1.SchemeGroupVersion.WithKind("Secret"),
		appsv1.SchemeGroupVersion.WithKind("DaemonSet"), discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"),
	} {
		if LayoutFor(gvk) == nil {
			t.Errorf("%s: no layout", gvk)
		}
	}
	for _, gvk := range []kschema.GroupVersionKind{{Group: "example.com", Version: "v1", Kind: "Widget"}, {}} {
		if LayoutFor(gvk) != nil {
			t.Errorf("%s: layout for a kind without a Go type", gvk)
		}
	}
}

// TestProtobufPlansBounded: decoding under ever new projections (a
// configuration reloaded again and again) keeps a bounded number of plans.
func TestProtobufPlansBounded(t *testing.T) {
	l := LayoutFor(corev1.SchemeGroupVersion.WithKind("Pod"))
	pb, _ := encodeBoth(t, &corev1.PodList{Items: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}}, corev1.SchemeGroupVersion.WithKind("PodList"))
	for range 3 * maxPlans {
		if _, _, err := decodeProtoList(pb, l, paths(".metadata.name", ".status.podIP")); err != nil {
			t.Fatal(err)
		}
	}
	if n := l.object.nplans.Load(); n > maxPlans {
		t.Fatalf("%d plans kept, bound %d", n, maxPlans)
	}
}

// watchFrame encodes obj as the API server frames one protobuf watch
// event: a 4-byte big-endian length, then a metav1.WatchEvent whose
// object is the enveloped protobuf object.
func watchFrame(t testing.TB, typ string, obj runtime.Object) []byte {
	t.Helper()
	var raw bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &raw); err != nil {
		t.Fatalf("protobuf: %v", err)
	}
	ev, err := (&metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: raw.Bytes()}}).Marshal()
	if err != nil {
		t.Fatalf("watch event: %v", err)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(ev))), ev...)
}
