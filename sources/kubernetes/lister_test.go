package kubernetes

import (
	"io"
	"strings"
	"testing"

	"go.uber.org/goleak"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

func TestListerPath(t *testing.T) {
	tests := []struct {
		l    lister
		want string
	}{
		{lister{gvr: podsGVR, ns: "shop"}, "api/v1/namespaces/shop/pods"},
		{lister{gvr: podsGVR}, "api/v1/pods"},
		{lister{gvr: kschema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, ns: "x"}, "apis/apps/v1/namespaces/x/deployments"},
	}
	for _, tt := range tests {
		if got := strings.Join(tt.l.path(), "/"); got != tt.want {
			t.Errorf("path %s, want %s", got, tt.want)
		}
	}
}

func TestStreamWatch(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	pr, pw := io.Pipe()
	record := (&watcher{src: mustBuild(t, "", `resource = "pods"`)}).record
	w := &streamWatch{l: lister{record: record}, body: pr, ch: make(chan watch.Event), done: make(chan struct{})}
	go w.run()
	go func() {
		io.WriteString(pw, `{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","generation":3}}}`+"\n")
		io.WriteString(pw, `{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}`)
		io.WriteString(pw, `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"too old"}}`)
		pw.Close()
	}()
	var got []watch.Event
	for ev := range w.ResultChan() {
		got = append(got, ev)
	}
	if len(got) != 3 {
		t.Fatalf("%d events", len(got))
	}
	a := got[0].Object.(*object).more.whole
	if got[0].Type != watch.Added || a.GetName() != "a" || a.GetGeneration() != 3 {
		t.Errorf("first event %v %v", got[0].Type, a)
	}
	if b := got[1].Object.(*object); got[1].Type != watch.Bookmark || b.org.ResourceVersion != "9" || b.kind != &initialEventsEnd {
		t.Errorf("bookmark %v", got[1])
	}
	st, ok := got[2].Object.(*metav1.Status)
	if got[2].Type != watch.Error || !ok || !apierrors.IsResourceExpired(apierrors.FromObject(st)) {
		t.Errorf("error event %#v", got[2])
	}
}

func TestStreamWatchGarbageAndStop(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	w := &streamWatch{body: io.NopCloser(strings.NewReader(`{"type":"ADDED","object":[1,2]}`)), ch: make(chan watch.Event), done: make(chan struct{})}
	go w.run()
	ev, ok := <-w.ResultChan()
	if !ok || ev.Type != watch.Error {
		t.Fatalf("want an error event for a non-object, got %v %v", ev, ok)
	}
	if _, ok := <-w.ResultChan(); ok {
		t.Error("channel not closed after a decode error")
	}

	pr, pw := io.Pipe()
	defer pw.Close()
	w = &streamWatch{body: pr, ch: make(chan watch.Event), done: make(chan struct{})}
	go w.run()
	w.Stop()
	w.Stop() // idempotent
	if _, ok := <-w.ResultChan(); ok {
		t.Error("channel not closed after Stop")
	}
}
