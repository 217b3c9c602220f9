package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeline/pipeline/engine/node"
)

// benchPodList is a list of n pods as the API server sends it, in
// protobuf and in JSON.
func benchPodList(b *testing.B, n int) (pb, js []byte) {
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "42"}}
	for i := range n {
		list.Items = append(list.Items, corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Namespace: "shop", UID: "0f2c1a7e-1111-4c2a-9d0e-7c1b2a3d4e5f",
				ResourceVersion: fmt.Sprint(1000 + i), Labels: map[string]string{"app": "web", "tier": "front"},
				CreationTimestamp: metav1.Unix(1700000000, 0),
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: "Update", APIVersion: "v1",
					FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{}}}`)}}},
			Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27",
				Ports:     []corev1.ContainerPort{{ContainerPort: 80, Protocol: "TCP"}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": resource.MustParse("500m")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.0.%d.%d", i/256, i%256),
				PodIPs:     []corev1.PodIP{{IP: fmt.Sprintf("10.0.%d.%d", i/256, i%256)}},
				Conditions: []corev1.PodCondition{{Type: "Ready", Status: "True", LastTransitionTime: metav1.Unix(1700000001, 0)}}},
		})
	}
	return encodeBoth(b, list, corev1.SchemeGroupVersion.WithKind("PodList"))
}

// BenchmarkDecodeList decodes a list of 1,000 pods from JSON and from
// protobuf, projected on what the flagship example reads and whole.
func BenchmarkDecodeList(b *testing.B) {
	pb, js := benchPodList(b, 1000)
	l := LayoutFor(corev1.SchemeGroupVersion.WithKind("Pod"))
	flagship := paths(".apiVersion", ".kind", ".metadata.name", ".metadata.namespace", ".metadata.uid",
		".metadata.resourceVersion", ".metadata.labels", ".status.podIP")
	for _, c := range []struct {
		name string
		body []byte
		pb   *Layout
		proj *node.Paths
	}{
		{"json-projected", js, nil, flagship},
		{"json-whole", js, nil, nil},
		{"protobuf-projected", pb, l, flagship},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			for b.Loop() {
				n := 0
				_, err := For(bufio.NewReader(bytes.NewReader(c.body)), c.pb, c.proj).List(func(map[string]any) error { n++; return nil })
				if err != nil || n != 1000 {
					b.Fatal(n, err)
				}
			}
		})
	}
}

// BenchmarkDecodeEvent decodes watch events of one pod from JSON and from
// protobuf, projected on what the flagship example reads.
func BenchmarkDecodeEvent(b *testing.B) {
	pbList, _ := benchPodList(b, 1)
	_, items, err := decodeProtoList(pbList, LayoutFor(corev1.SchemeGroupVersion.WithKind("Pod")), node.WholeObject())
	if err != nil || len(items) != 1 {
		b.Fatal(err)
	}
	flagship := paths(".apiVersion", ".kind", ".metadata.name", ".metadata.namespace", ".metadata.uid",
		".metadata.resourceVersion", ".metadata.labels", ".status.podIP")
	jsEvent := []byte(`{"type":"MODIFIED","object":` + string(mustJSON(b, items[0])) + "}\n")
	var jsStream []byte
	for range 1000 {
		jsStream = append(jsStream, jsEvent...)
	}
	pbStream := protoWatchStream(b, pbList, 1000)
	l := LayoutFor(corev1.SchemeGroupVersion.WithKind("Pod"))
	for _, c := range []struct {
		name   string
		stream []byte
		pb     *Layout
	}{{"json-projected", jsStream, nil}, {"protobuf-projected", pbStream, l}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.stream)))
			for b.Loop() {
				d := For(bufio.NewReader(bytes.NewReader(c.stream)), c.pb, flagship)
				for range 1000 {
					if _, _, err := d.Event(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// protoWatchStream makes n protobuf watch frames of the first pod of a
// protobuf PodList body.
func protoWatchStream(b *testing.B, pbList []byte, n int) []byte {
	list := &corev1.PodList{}
	if err := list.Unmarshal(unknownRaw(b, pbList)); err != nil || len(list.Items) == 0 {
		b.Fatal(err)
	}
	raw, err := list.Items[0].Marshal()
	if err != nil {
		b.Fatal(err)
	}
	env := append([]byte{}, protoMagic...)
	env = appendBytesField(env, 1, appendBytesField(appendBytesField(nil, 1, []byte("v1")), 2, []byte("Pod")))
	env = appendBytesField(env, 2, raw)
	ev := appendBytesField(nil, 1, []byte("MODIFIED"))
	ev = appendBytesField(ev, 2, appendBytesField(nil, 1, env))
	var out []byte
	for range n {
		out = binary.BigEndian.AppendUint32(out, uint32(len(ev)))
		out = append(out, ev...)
	}
	return out
}

func mustJSON(b *testing.B, v any) []byte {
	js, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return js
}

func unknownRaw(b *testing.B, body []byte) []byte {
	_, _, raw, err := unknownEnvelope(body)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

func appendBytesField(b []byte, num int, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(num<<3|2))
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}
