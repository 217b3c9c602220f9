package kubernetes

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// BenchmarkActualEntry: the entry of one ConfigMap the sink applied, read
// from its managedFields (what a resync does per changed object).
func BenchmarkActualEntry(b *testing.B) {
	tg := &Target{s: &Sink{manager: "pipeline.k1"}}
	objs := make([]*unstructured.Unstructured, 1000)
	for i := range objs {
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("cm-%04d", i), "namespace": "k1", "resourceVersion": "1",
				"labels": map[string]any{"pipeline.io/owner": "pipeline.k1"}},
			"data": map[string]any{"value": fmt.Sprint(i)}}}
		o.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "pipeline.k1", Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: "v1", FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:data":{"f:value":{}},"f:metadata":{"f:labels":{"f:pipeline.io/owner":{}}}}`)}})
		objs[i] = o
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, o := range objs {
			if _, ok := tg.actualEntry(o); !ok {
				b.Fatal("no entry")
			}
		}
	}
}
