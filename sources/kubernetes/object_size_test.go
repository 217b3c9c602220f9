package kubernetes

import (
	"bufio"
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/kobject"
	"github.com/pipeline/pipeline/sources/kubernetes/wire"
)

// BenchmarkRecordObjectRetained reports the bytes the cache keeps per pod
// for the README's flagship chain (podIP, name and namespace read): each
// pod decoded from a JSON list as the source decodes it, made the cached
// object, and kept.
func BenchmarkRecordObjectRetained(b *testing.B) {
	const n = 10000
	var list bytes.Buffer
	list.WriteString(`{"apiVersion":"v1","kind":"PodList","metadata":{"resourceVersion":"9"},"items":[`)
	for i := range n {
		if i > 0 {
			list.WriteByte(',')
		}
		fmt.Fprintf(&list, `{"metadata":{"name":"pod-%05d","namespace":"bench","uid":"0c6f0e2a-7d4e-4f55-9d1b-%012d","resourceVersion":"%d","labels":{"app":"bench"}},`+
			`"spec":{"nodeName":"node-1","containers":[{"name":"c","image":"busybox:1.36"}]},"status":{"phase":"Running","podIP":"10.%d.%d.%d"}}`,
			i, i, 1000+i, i>>16&255, i>>8&255, i&255)
	}
	list.WriteString("]}")
	proj := &node.Paths{}
	for _, p := range []string{"status.podIP", "metadata.name", "metadata.namespace", "apiVersion", "kind", "metadata.uid", "metadata.resourceVersion"} {
		proj.Add(strings.Split(p, ".")...)
	}
	reads := &node.Paths{}
	for _, p := range []string{"status.podIP", "metadata.name", "metadata.namespace"} {
		reads.Add(strings.Split(p, ".")...)
	}
	sh := newShape(reads)
	keyer, _ := kobject.NewKeyer(nil)
	var perObject float64
	for b.Loop() {
		var in interner
		objs := make([]*object, 0, n)
		runtime.GC()
		before := heapInUse()
		_, err := wire.For(bufio.NewReader(bytes.NewReader(list.Bytes())), nil, proj).List(func(obj map[string]any) error {
			u := &unstructured.Unstructured{Object: obj}
			objs = append(objs, newRecordObject(u, "source.kubernetes.pods", keyer, sh, &in))
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		perObject = float64(heapInUse()-before) / n
		runtime.KeepAlive(objs)
	}
	b.ReportMetric(perObject, "B/pod")
}

func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
