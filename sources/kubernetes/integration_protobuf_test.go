//go:build integration

package kubernetes

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/sources/kubernetes/wire"
)

// TestProtobufSameAsJSONOnServer lists and watches the same objects of a
// real API server in JSON and in protobuf, for several projections, and
// checks both decoders yield the same objects and events.
func TestProtobufSameAsJSONOnServer(t *testing.T) {
	k := newKube(t)
	defer k.close()
	ctx := context.Background()
	conn, err := newConnection(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.close()
	rc, err := newRESTClient(conn)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("p", i), Labels: map[string]string{"app": "web", "i": fmt.Sprint(i)}},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": resource.MustParse("250m")}}}}}}
		got, err := k.cs.CoreV1().Pods(k.ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got.Status.PodIP = fmt.Sprint("10.1.0.", i+1)
		got.Status.PodIPs = []corev1.PodIP{{IP: got.Status.PodIP}}
		got.Status.Phase = corev1.PodRunning
		got.Status.StartTime = &metav1.Time{Time: time.Unix(1700000000, 0)}
		if i == 0 {
			continue // one pod keeps an empty status
		}
		if _, err := k.cs.CoreV1().Pods(k.ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := k.cs.CoreV1().ConfigMaps(k.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"},
		Data: map[string]string{"a": "1", "empty": ""}, BinaryData: map[string][]byte{"b": {0, 1}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	projections := []*node.Paths{
		paths(".status.podIP", ".metadata.name", ".metadata.namespace", ".metadata.uid", ".metadata.resourceVersion", ".apiVersion", ".kind"),
		paths(".status.podIPs", ".metadata.labels.app", ".spec.nodeName", ".spec.containers", ".status.startTime", ".status.hostIP"),
		paths(".metadata", ".status", ".data", ".binaryData.b", ".immutable"),
	}
	for _, r := range []struct {
		gvr kschema.GroupVersionResource
		gvk kschema.GroupVersionKind
	}{
		{podsGVR, corev1.SchemeGroupVersion.WithKind("Pod")},
		{corev1.SchemeGroupVersion.WithResource("configmaps"), corev1.SchemeGroupVersion.WithKind("ConfigMap")},
	} {
		pb := wire.LayoutFor(r.gvk)
		if pb == nil {
			t.Fatalf("%s: no protobuf layout", r.gvk)
		}
		for _, p := range projections {
			js := lister{rc: rc, gvr: r.gvr, ns: k.ns, proj: p}
			pl := lister{rc: rc, gvr: r.gvr, ns: k.ns, proj: p, pb: pb}
			want, err := listWhole(ctx, js)
			if err != nil {
				t.Fatal(err)
			}
			got, err := listWhole(ctx, pl)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Items) == 0 {
				t.Fatalf("%s: nothing listed", r.gvr.Resource)
			}
			if d := cmp.Diff(want.Items, got.Items); d != "" {
				t.Fatalf("%s %s list (-json +protobuf):\n%s", r.gvr.Resource, p, d)
			}
			if want.GetResourceVersion() == "" || want.GetResourceVersion() != got.GetResourceVersion() && got.GetResourceVersion() == "" {
				t.Fatalf("list resourceVersion: json %q protobuf %q", want.GetResourceVersion(), got.GetResourceVersion())
			}
		}
	}

	// Watch both encodings from one resourceVersion through a relabel,
	// a status change and a delete.
	p := &node.Paths{} // a new projection: decoders keep per-projection plans
	p.Merge(projections[0])
	p.Merge(projections[1])
	js := lister{rc: rc, gvr: podsGVR, ns: k.ns, proj: p, record: keepWhole}
	pl := lister{rc: rc, gvr: podsGVR, ns: k.ns, proj: p, pb: wire.LayoutFor(corev1.SchemeGroupVersion.WithKind("Pod")), record: keepWhole}
	l, err := listWhole(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	opts := metav1.ListOptions{ResourceVersion: l.GetResourceVersion(), AllowWatchBookmarks: true}
	wj, err := js.Watch(wctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer wj.Stop()
	wp, err := pl.Watch(wctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer wp.Stop()
	k.relabel(t, k.ns, "p1", map[string]string{"app": "api"})
	pod, err := k.cs.CoreV1().Pods(k.ns).Get(ctx, "p2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.PodIP = "10.1.0.99"
	if _, err := k.cs.CoreV1().Pods(k.ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := k.cs.CoreV1().Pods(k.ns).Delete(ctx, "p0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	collect := func(w watch.Interface) []watch.Event {
		var evs []watch.Event
		for len(evs) < 3 {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("watch closed after %d events", len(evs))
				}
				if ev.Type != watch.Bookmark {
					evs = append(evs, ev)
				}
			case <-wctx.Done():
				t.Fatalf("%d events before the timeout", len(evs))
			}
		}
		return evs
	}
	want, got := collect(wj), collect(wp)
	for i := range want {
		if want[i].Type != got[i].Type {
			t.Fatalf("event %d: json %s protobuf %s", i, want[i].Type, got[i].Type)
		}
		wo, _ := want[i].Object.(*object)
		gobj, _ := got[i].Object.(*object)
		if wo == nil || gobj == nil {
			t.Fatalf("event %d: objects %T %T", i, want[i].Object, got[i].Object)
		}
		if d := cmp.Diff(wo.more.whole.Object, gobj.more.whole.Object); d != "" {
			t.Fatalf("event %d %s (-json +protobuf):\n%s", i, want[i].Type, d)
		}
	}
}

// keepWhole is a lister's record that keeps each decoded object as it is.
func keepWhole(u *unstructured.Unstructured) *object { return &object{more: &content{whole: u}} }

// listWhole lists with l, keeping each object whole as it is decoded.
func listWhole(ctx context.Context, l lister) (*unstructured.UnstructuredList, error) {
	l.record = keepWhole
	obj, err := l.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	rl := obj.(*recordList)
	list := &unstructured.UnstructuredList{}
	list.SetResourceVersion(rl.ResourceVersion)
	for _, it := range rl.Items {
		list.Items = append(list.Items, *it.more.whole)
	}
	return list, nil
}

func paths(ps ...string) *node.Paths {
	p := &node.Paths{}
	for _, s := range ps {
		p.Add(strings.Split(strings.TrimPrefix(s, "."), ".")...)
	}
	return p
}
