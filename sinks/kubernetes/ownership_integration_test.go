//go:build integration

package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/pipeline/pipeline/engine/node"
)

func keys(es []node.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Key)
	}
	return out
}

// TestTwoConfigurationsOneName: two configurations in two directories,
// each with a sink of the same name writing in one namespace, never see
// (so never prune) each other's objects.
func TestTwoConfigurationsOneName(t *testing.T) {
	ns := useServer(t)
	a := openSink(t, configMapSink(ns), node.ModeRun)
	b := openSink(t, configMapSink(ns), node.ModeRun)
	if a.s.value == b.s.value {
		t.Fatalf("both sinks are %s=%s", a.s.label, a.s.value)
	}
	for _, e := range update(t, a, prepared(t, a, strRecords("a", "1"))...) {
		if e.Err != nil {
			t.Fatal(e.Err)
		}
	}
	for _, e := range update(t, b, prepared(t, b, strRecords("b", "2"))...) {
		if e.Err != nil {
			t.Fatal(e.Err)
		}
	}
	for tg, want := range map[*Target]string{a: ns + "/a", b: ns + "/b"} {
		got, err := tg.Actual(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if k := keys(got); len(k) != 1 || k[0] != want {
			t.Errorf("%s lists %v, want only %s", tg.s.value, k, want)
		}
	}
}

// TestNeverAdoptSilently: a ConfigMap made by hand with the name a record
// wants is not applied over: plan and the apply name its owner, and the
// object stays as it was. With adopt = true plan says it adopts it, the
// apply takes it over and from then on it is the sink's.
func TestNeverAdoptSilently(t *testing.T) {
	ns := useServer(t)
	cs := clientset.NewForConfigOrDie(srv.RESTConfig())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hand", Namespace: ns}, Data: map[string]string{"value": "mine"}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	plan := openSink(t, configMapSink(ns), node.ModePlan)
	if d, err := plan.DryRun(context.Background(), prepared(t, plan, strRecords("hand", "pipeline's"))[0]); err != nil ||
		!strings.Contains(d.Refused, "exists and is not owned by") || !strings.Contains(d.Refused, "set adopt = true") || len(d.Lines) != 0 {
		t.Errorf("plan of a hand-made object: %+v, %v; want it refused as not owned", d, err)
	}
	tg := openSink(t, configMapSink(ns), node.ModeRun)
	e := update(t, tg, prepared(t, tg, strRecords("hand", "pipeline's"))...)[0]
	if e.Err == nil || !strings.Contains(e.Err.Error(), "exists and is not owned by "+tg.s.label+"="+tg.s.value) {
		t.Errorf("apply over a hand-made object: %v", e.Err)
	}
	got, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "hand", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Data["value"] != "mine" || got.Labels[tg.s.label] != "" {
		t.Errorf("the hand-made object was changed: data %v, labels %v", got.Data, got.Labels)
	}
	if ex := strings.Join(tg.Explain(ns+"/hand"), "\n"); !strings.Contains(ex, "not owned by") {
		t.Errorf("explain does not say why:\n%s", ex)
	}

	adopt := configMapSink(ns) + "adopt = true\n"
	plan = openSink(t, adopt, node.ModePlan)
	d, err := plan.DryRun(context.Background(), prepared(t, plan, strRecords("hand", "pipeline's"))[0])
	if err != nil || d.Refused != "" || !strings.Contains(d.Adopts, "exists and is not owned by") || !slices.Contains(d.Lines, `~ data.value: "mine" => "pipeline's"`) {
		t.Errorf("plan with adopt: %+v, %v", d, err)
	}
	tg = openSink(t, adopt, node.ModeRun)
	if e := update(t, tg, prepared(t, tg, strRecords("hand", "pipeline's"))...)[0]; e.Err != nil {
		t.Fatalf("adopt: %v", e.Err)
	}
	actual, err := tg.Actual(context.Background())
	if err != nil || len(actual) != 1 || actual[0].Key != ns+"/hand" {
		t.Errorf("after adopting: %v, %v", keys(actual), err)
	}
}

// TestDeleteRequiresManager: an object that merely carries a copy of the
// sink's label (its field manager never wrote it) is neither listed as
// the sink's (so plan shows no delete) nor deleted, and explain says why.
func TestDeleteRequiresManager(t *testing.T) {
	ns := useServer(t)
	tg := openSink(t, configMapSink(ns), node.ModeRun)
	cs := clientset.NewForConfigOrDie(srv.RESTConfig())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "copied", Namespace: ns,
		Labels: map[string]string{tg.s.label: tg.s.value}}, Data: map[string]string{"value": "theirs"}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	actual, err := tg.Actual(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(actual) != 0 {
		t.Errorf("lists %v as the sink's: plan would show deletes", keys(actual))
	}
	if ex := strings.Join(tg.Explain(ns+"/copied"), "\n"); !strings.Contains(ex, "never wrote it") {
		t.Errorf("explain does not say why:\n%s", ex)
	}
	del := []node.Entry{{Key: ns + "/copied"}}
	tg.Delete(context.Background(), del)
	if del[0].Err != nil {
		t.Fatal(del[0].Err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "copied", metav1.GetOptions{}); err != nil {
		t.Errorf("the object with a copied label was deleted: %v", err)
	}
}

// TestMigrateLegacyOwner: objects an earlier version labelled with its
// default identity (pipeline.NAME) are not the sink's until relabelled
// as the documentation says (kubectl label --overwrite); then they are
// listed, updated and pruned as the sink's.
func TestMigrateLegacyOwner(t *testing.T) {
	ns := useServer(t)
	old := openSink(t, configMapSink(ns)+`owner_value = "pipeline.test"`+"\n", node.ModeRun)
	for _, e := range update(t, old, prepared(t, old, strRecords("a", "1"))...) {
		if e.Err != nil {
			t.Fatal(e.Err)
		}
	}
	tg := openSink(t, configMapSink(ns), node.ModeRun)
	if actual, err := tg.Actual(context.Background()); err != nil || len(actual) != 0 {
		t.Fatalf("lists %v, %v before the migration", keys(actual), err)
	}
	e := update(t, tg, prepared(t, tg, strRecords("a", "2"))...)[0]
	if e.Err == nil || !strings.Contains(e.Err.Error(), "default identity of earlier versions") {
		t.Errorf("apply over an object of the old default: %v", e.Err)
	}
	// kubectl label configmaps -n NS -l pipeline.io/owner=pipeline.test pipeline.io/owner=NEW --overwrite
	cs := clientset.NewForConfigOrDie(srv.RESTConfig())
	patch := `{"metadata":{"labels":{"` + tg.s.label + `":"` + tg.s.value + `"}}}`
	if _, err := cs.CoreV1().ConfigMaps(ns).Patch(context.Background(), "a", types.MergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: "kubectl-label"}); err != nil {
		t.Fatal(err)
	}
	if actual, err := tg.Actual(context.Background()); err != nil || len(actual) != 1 {
		t.Fatalf("lists %v, %v after the migration", keys(actual), err)
	}
	if e := update(t, tg, prepared(t, tg, strRecords("a", "2"))...)[0]; e.Err != nil {
		t.Errorf("update after the migration: %v", e.Err)
	}
	del := []node.Entry{{Key: ns + "/a"}}
	tg.Delete(context.Background(), del)
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "a", metav1.GetOptions{}); err == nil || del[0].Err != nil {
		t.Errorf("prune after the migration: the object stays (%v)", del[0].Err)
	}
}

// TestAnotherManagersListElement: a container another manager applied
// into the sink's Deployment (containers are a list keyed by name) is
// not drift, so a resync does not write the object again and again; a
// hand edit of the sink's own container is.
func TestAnotherManagersListElement(t *testing.T) {
	ns := useServer(t)
	tg := openSink(t, fmt.Sprintf(`
namespaces = [%q]
object = {
  apiVersion = "apps/v1"
  kind       = "Deployment"
  metadata   = { name = record.key, namespace = %q }
  spec = {
    selector = { matchLabels = { app = record.key } }
    template = {
      metadata = { labels = { app = record.key } }
      spec     = { containers = [{ name = "app", image = record.value, env = [{ name = "A", value = "1" }] }] }
    }
  }
}
`, ns, ns), node.ModeRun)
	e := prepared(t, tg, strRecords("web", "nginx:1"))[0]
	if e := update(t, tg, e)[0]; e.Err != nil {
		t.Fatal(e.Err)
	}
	same := func() bool {
		t.Helper()
		actual, err := tg.Actual(context.Background())
		if err != nil || len(actual) != 1 {
			t.Fatalf("actual %v, %v", keys(actual), err)
		}
		return actual[0].Same(e)
	}
	if !same() {
		t.Fatal("the object the sink just applied reads as drifted")
	}
	deps := clientset.NewForConfigOrDie(srv.RESTConfig()).AppsV1().Deployments(ns)
	sidecar := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"` + ns + `"},` +
		`"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"B","value":"2"}]},{"name":"sidecar","image":"envoy:1"}]}}}}`
	if _, err := deps.Patch(context.Background(), "web", types.ApplyPatchType, []byte(sidecar),
		metav1.PatchOptions{FieldManager: "mesh-injector"}); err != nil {
		t.Fatal(err)
	}
	if !same() {
		t.Error("another manager's container and env var read as drift: every resync would write the object again")
	}
	// A hand edit of the sink's own container is drift.
	edit := `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:2"}]}}}}`
	if _, err := deps.Patch(context.Background(), "web", types.StrategicMergePatchType, []byte(edit),
		metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	if same() {
		t.Error("a hand edit of the sink's container's image is not drift")
	}
}

// TestNeverAdoptSilentlyInBulk: a batch large enough that the sink lists
// the namespace instead of reading each object still refuses the one
// hand-made object among them and creates the others.
func TestNeverAdoptSilentlyInBulk(t *testing.T) {
	ns := useServer(t)
	cs := clientset.NewForConfigOrDie(srv.RESTConfig())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "k07", Namespace: ns}, Data: map[string]string{"value": "mine"}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tg := openSink(t, configMapSink(ns), node.ModeRun)
	var kv []string
	for i := range 2 * surveyMin {
		kv = append(kv, fmt.Sprintf("k%02d", i), "v")
	}
	for _, e := range update(t, tg, prepared(t, tg, strRecords(kv...))...) {
		if hand := e.Key == ns+"/k07"; hand != (e.Err != nil) || (hand && !strings.Contains(e.Err.Error(), "exists and is not owned by")) {
			t.Errorf("%s: %v", e.Key, e.Err)
		}
	}
	got, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "k07", metav1.GetOptions{})
	if err != nil || got.Data["value"] != "mine" || len(got.Labels) != 0 {
		t.Errorf("the hand-made object was changed: %v, %v", got, err)
	}
	if actual, err := tg.Actual(context.Background()); err != nil || len(actual) != 2*surveyMin-1 {
		t.Errorf("the sink's objects: %d, %v", len(actual), err)
	}
}

// TestAnotherManagersPort: a port another field manager adds to the
// sink's Service (ports are a list keyed by port and protocol) is not
// drift; the sink's selector changed by hand is, and the next apply
// restores it without touching the other manager's port.
func TestAnotherManagersPort(t *testing.T) {
	ns := useServer(t)
	tg := openSink(t, fmt.Sprintf(`
namespaces = [%q]
object = {
  apiVersion = "v1"
  kind       = "Service"
  metadata   = { name = record.key, namespace = %q }
  spec       = { ports = [{ port = 80, name = "http" }], selector = { app = record.value } }
}
`, ns, ns), node.ModeRun)
	e := prepared(t, tg, strRecords("web", "web"))[0]
	if e := update(t, tg, e)[0]; e.Err != nil {
		t.Fatal(e.Err)
	}
	same := func() bool {
		t.Helper()
		actual, err := tg.Actual(context.Background())
		if err != nil || len(actual) != 1 {
			t.Fatalf("actual %v, %v", keys(actual), err)
		}
		return actual[0].Same(e)
	}
	if !same() {
		t.Fatal("the Service the sink just applied reads as drifted")
	}
	svcs := clientset.NewForConfigOrDie(srv.RESTConfig()).CoreV1().Services(ns)
	metrics := `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"` + ns + `"},` +
		`"spec":{"ports":[{"port":9090,"name":"metrics"}]}}`
	if _, err := svcs.Patch(context.Background(), "web", types.ApplyPatchType, []byte(metrics),
		metav1.PatchOptions{FieldManager: "metrics-injector"}); err != nil {
		t.Fatal(err)
	}
	if !same() {
		t.Error("another manager's port reads as drift: every resync would write the Service again")
	}
	edit := `{"spec":{"selector":{"app":"other"}}}`
	if _, err := svcs.Patch(context.Background(), "web", types.MergePatchType, []byte(edit),
		metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	if same() {
		t.Fatal("a hand edit of the sink's selector is not drift")
	}
	if e := update(t, tg, e)[0]; e.Err != nil {
		t.Fatalf("restoring the hand edit: %v", e.Err)
	}
	got, err := svcs.Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Selector["app"] != "web" || len(got.Spec.Ports) != 2 {
		t.Errorf("after the restore: selector %v, %d ports; want app=web and both ports", got.Spec.Selector, len(got.Spec.Ports))
	}
	if _, ok := got.Annotations["pipeline.io/applied"]; ok {
		t.Error("the apply still writes the whole-body annotation")
	}
	if !same() {
		t.Error("the restored Service reads as drifted")
	}
}

// TestLegacyAppliedAnnotation: an object an earlier version applied,
// with the whole body in an annotation, reads as in sync (no write at
// upgrade); the next apply of the object drops the annotation.
func TestLegacyAppliedAnnotation(t *testing.T) {
	ns := useServer(t)
	tg := openSink(t, configMapSink(ns), node.ModeRun)
	e := prepared(t, tg, strRecords("a", "1"))[0]
	var obj map[string]any
	if err := json.Unmarshal(e.Data, &obj); err != nil {
		t.Fatal(err)
	}
	obj["metadata"].(map[string]any)["annotations"] = map[string]any{"pipeline.io/applied": string(e.Data)}
	old, _ := json.Marshal(obj)
	cms := clientset.NewForConfigOrDie(srv.RESTConfig()).CoreV1().ConfigMaps(ns)
	force := true
	if _, err := cms.Patch(context.Background(), "a", types.ApplyPatchType, old,
		metav1.PatchOptions{FieldManager: tg.s.manager, Force: &force}); err != nil {
		t.Fatal(err)
	}
	actual, err := tg.Actual(context.Background())
	if err != nil || len(actual) != 1 || !actual[0].Same(e) {
		t.Fatalf("an object of an earlier version: %v, %v; want it in sync", keys(actual), err)
	}
	e2 := prepared(t, tg, strRecords("a", "2"))[0]
	if e := update(t, tg, e2)[0]; e.Err != nil {
		t.Fatal(e.Err)
	}
	got, err := cms.Get(context.Background(), "a", metav1.GetOptions{})
	if err != nil || got.Annotations["pipeline.io/applied"] != "" || got.Data["value"] != "2" {
		t.Errorf("after the next apply: annotations %v, data %v, %v", got.Annotations, got.Data, err)
	}
}
