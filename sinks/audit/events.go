package audit

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"github.com/hashicorp/hcl/v2"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/kubeclient"
	"github.com/pipeline/pipeline/schema"
)

var (
	eventsClusterAttr = schema.Ref("cluster", "cluster").
				Doc("The cluster block whose API server receives the Events, as a reference. Absent: the pod's service account when KUBERNETES_SERVICE_HOST is set, else $KUBECONFIG or ~/.kube/config.").
				Example("cluster.prod")
	eventsNamespaceAttr = schema.String("namespace").Default("", `""`).
				Doc("Namespace the Events are created in. Empty: the pipeline's own namespace ($POD_NAMESPACE, else the pod's service account namespace), else \"default\". The Events are about the pipeline's own Pod ($POD_NAME) when POD_NAME is set and POD_NAMESPACE is this namespace, else about a ConfigMap named `pipeline-audit` in this namespace (which need not exist).").
				Example(`"pipeline"`)
	eventsOpsAttr = schema.StringList("ops").Required().
			Doc("Line ops that become Events: `upsert`, `delete`, `open`, and the engine's decisions (`config_loaded`, `sink_degraded`, `sink_recovered`, `drift_repaired`, `grace_deletion`, `reload_applied`, `reload_rejected`, `target_replaced`, and the deletion brake's `deletes_held` and `deletes_released`), and what sinks did (`file_rendered` of a template sink, `object_applied` and `object_deleted` of a kubernetes sink).").
			Example(`["delete", "sink_degraded", "drift_repaired"]`)

	eventsBlock = schema.Nested("events", schema.Block{Attrs: []schema.Attribute{eventsClusterAttr, eventsNamespaceAttr, eventsOpsAttr}}).
			WithDoc("Also emits a Kubernetes Event for each written line whose op is listed, best effort: Events never hold or fail the trail, and client-go's spam filter bounds them (a burst of 25 Events per type, Normal or Warning, then one every 5 s; repeats are aggregated).")
)

// eventReasons maps every op an Event may be made of to its reason, a short
// CamelCase word, and whether it is a Warning.
var eventReasons = map[string]struct {
	reason  string
	warning bool
}{
	opUpsert:                             {"Applied", false},
	opDelete:                             {"Deleted", false},
	opOpen:                               {"TrailOpened", false},
	string(node.DecisionConfigLoaded):    {"ConfigLoaded", false},
	string(node.DecisionSinkDegraded):    {"SinkDegraded", true},
	string(node.DecisionSinkRecovered):   {"SinkRecovered", false},
	string(node.DecisionDriftRepaired):   {"DriftRepaired", false},
	string(node.DecisionGraceDeletion):   {"GraceDeletion", false},
	string(node.DecisionReloadApplied):   {"ReloadApplied", false},
	string(node.DecisionReloadRejected):  {"ReloadRejected", true},
	string(node.DecisionTargetReplaced):  {"TargetReplaced", true},
	string(node.DecisionFileRendered):    {"FileRendered", false},
	string(node.DecisionObjectApplied):   {"ObjectApplied", false},
	string(node.DecisionObjectDeleted):   {"ObjectDeleted", false},
	string(node.DecisionDeletesBraked):   {"DeletesHeld", true},
	string(node.DecisionDeletesReleased): {"DeletesReleased", false},
}

// Spam filter and aggregation of the broadcaster: memory and API calls stay
// bounded whatever the rate of lines.
const (
	eventBurst     = 25
	eventQPS       = 0.2 // one Event every 5 s once the burst is spent
	eventCacheSize = 4096
	// GenerationAnnotation carries the config generation on every Event.
	GenerationAnnotation = "pipeline.io/config-generation"
	eventComponent       = "pipeline-audit"
)

// eventsConfig is a decoded events block.
type eventsConfig struct {
	cluster   *schema.Cluster
	namespace string
	ops       map[string]bool
}

// decodeEvents decodes the optional events block; nil when absent.
func decodeEvents(b node.Build) (*eventsConfig, hcl.Diagnostics) {
	blocks := eventsBlock.Get(b.Content)
	if len(blocks) == 0 {
		return nil, nil
	}
	c := blocks[0]
	var diags hcl.Diagnostics
	ec := &eventsConfig{ops: map[string]bool{}}
	ec.namespace = eventsNamespaceAttr.Read(c, &diags)
	ops, rng, d := eventsOpsAttr.Get(c)
	diags = append(diags, d...)
	valid := make([]string, 0, len(eventReasons))
	for op := range eventReasons {
		valid = append(valid, op)
	}
	sort.Strings(valid)
	for _, op := range ops {
		if _, ok := eventReasons[op]; !ok {
			detail := fmt.Sprintf("%q is not an op that can become an Event. Valid ops: %s.", op, strings.Join(valid, ", "))
			if s := schema.DidYouMean(op, valid); s != "" {
				detail = fmt.Sprintf("%q is not an op that can become an Event; did you mean %q? Valid ops: %s.", op, s, strings.Join(valid, ", "))
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown op in events", Detail: detail, Subject: rng.Ptr()})
			continue
		}
		ec.ops[op] = true
	}
	if eventsClusterAttr.Has(c) {
		tr, rng, d := eventsClusterAttr.Get(c)
		diags = append(diags, d...)
		if !d.HasErrors() {
			var cl *schema.Cluster
			cl, d = resolveCluster(tr, rng, b.Config)
			diags = append(diags, d...)
			ec.cluster = cl
		}
	}
	return ec, diags
}

// resolveCluster resolves cluster = cluster.NAME against the loaded blocks.
func resolveCluster(tr hcl.Traversal, rng hcl.Range, cfg *schema.Config) (*schema.Cluster, hcl.Diagnostics) {
	name := ""
	if len(tr) == 2 && tr.RootName() == "cluster" {
		if a, ok := tr[1].(hcl.TraverseAttr); ok {
			name = a.Name
		}
	}
	if name == "" {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid cluster reference",
			Detail: "cluster must name a cluster block, such as cluster.prod.", Subject: rng.Ptr()}}
	}
	var names []string
	if cfg != nil {
		if c, ok := cfg.Clusters[name]; ok {
			return c, nil
		}
		for n := range cfg.Clusters {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	detail := fmt.Sprintf("No cluster block named %q is declared.", name)
	if len(names) > 0 {
		detail += " Declared clusters: " + strings.Join(names, ", ") + "."
	}
	return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Reference to undeclared cluster", Detail: detail, Subject: rng.Ptr()}}
}

// serviceAccountNamespace holds the namespace of the pod the pipeline runs in.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// eventNamespace is the namespace Events go to.
func (ec *eventsConfig) eventNamespace() string {
	if ec.namespace != "" {
		return ec.namespace
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(serviceAccountNamespace); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	return metav1.NamespaceDefault
}

// KubeRules is the sink's Kubernetes permissions: with an events block, create and
// patch (repeated Events are aggregated by patching) of events in the
// Events' namespace.
func (s *Sink) KubeRules() []node.KubeRule {
	ec := s.cfg.events
	if ec == nil {
		return nil
	}
	r := node.KubeRule{Resource: "events", Verbs: []string{"create", "patch"},
		Remote: ec.cluster != nil && !ec.cluster.InCluster}
	if ec.namespace != "" {
		r.Namespace = ec.namespace
	} else {
		r.OwnNamespace = true
	}
	return []node.KubeRule{r}
}

// emitter turns trail lines into Events through client-go's broadcaster.
// Emit never blocks: the recorder drops Events when the broadcaster's queue
// (1000) is full, and API calls happen on the broadcaster's goroutine.
type emitter struct {
	ops       map[string]bool
	obj       *corev1.ObjectReference
	bc        record.EventBroadcaster
	rec       record.EventRecorder
	sink      *eventSink
	emitted   prometheus.Counter
	cancelCtx context.CancelFunc
	closeIdle func() // nil for a client the sink did not build
}

// newEmitter starts a broadcaster writing to cs. failures counts failed API
// calls; log gets one line per distinct error.
func newEmitter(ec *eventsConfig, cs kubernetes.Interface, log *slog.Logger, emitted, failures prometheus.Counter) *emitter {
	ns := ec.eventNamespace()
	obj := &corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "pipeline-audit"}
	if pod := os.Getenv("POD_NAME"); pod != "" && os.Getenv("POD_NAMESPACE") == ns {
		obj = &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: pod, UID: types.UID(os.Getenv("POD_UID"))}
	}
	// client-go logs every failed Event through the context's logger; the
	// sink logs each distinct error once instead.
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	bc := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{
		LRUCacheSize: eventCacheSize, BurstSize: eventBurst, QPS: eventQPS}))
	sink := &eventSink{ctx: ctx, client: cs, ns: ns, log: log, failures: failures, seen: map[string]bool{}}
	bc.StartRecordingToSink(sink)
	host, _ := os.Hostname()
	return &emitter{ops: ec.ops, obj: obj, bc: bc, sink: sink, emitted: emitted, cancelCtx: cancel,
		rec: bc.NewRecorder(scheme.Scheme, corev1.EventSource{Component: eventComponent, Host: host})}
}

// emit records an Event for l when its op is selected. l is already
// scrubbed of sensitive values; only its node, key, op and reason are used,
// never its value, source or detail.
// gen is the config generation when the line has none.
func (e *emitter) emit(l *line, gen uint64) {
	if e == nil || !e.ops[l.op] {
		return
	}
	r := eventReasons[l.op]
	typ := corev1.EventTypeNormal
	if r.warning {
		typ = corev1.EventTypeWarning
	}
	msg := "node " + l.node + ": " + l.op
	if l.node == "" { // a decision about the whole graph
		msg = "graph: " + l.op
	}
	if l.key != "" {
		msg += " key " + strconv.Quote(l.key)
	}
	if l.reason != "" {
		msg += ": " + l.reason
	}
	const maxMessage = 1024 // the API server's limit is larger; keep Events short
	if len(msg) > maxMessage {
		msg = msg[:maxMessage]
	}
	e.rec.AnnotatedEventf(e.obj, map[string]string{GenerationAnnotation: strconv.FormatUint(max(l.gen, gen), 10)}, typ, r.reason, "%s", msg)
	if e.emitted != nil {
		e.emitted.Inc()
	}
}

// close stops the broadcaster and cancels API calls in flight.
func (e *emitter) close() {
	if e == nil {
		return
	}
	e.bc.Shutdown()
	e.cancelCtx()
	if e.closeIdle != nil {
		e.closeIdle()
	}
}

// eventSink implements record.EventSink with calls cancelled on close, a
// failure counter and one log line per distinct error.
type eventSink struct {
	ctx      context.Context
	client   kubernetes.Interface
	ns       string
	log      *slog.Logger
	failures prometheus.Counter

	mu   sync.Mutex
	seen map[string]bool
}

func (s *eventSink) Create(ev *corev1.Event) (*corev1.Event, error) {
	out, err := s.client.CoreV1().Events(s.ns).Create(s.ctx, ev, metav1.CreateOptions{})
	return out, s.failed("create", err)
}

func (s *eventSink) Update(ev *corev1.Event) (*corev1.Event, error) {
	out, err := s.client.CoreV1().Events(s.ns).Update(s.ctx, ev, metav1.UpdateOptions{})
	return out, s.failed("update", err)
}

func (s *eventSink) Patch(ev *corev1.Event, data []byte) (*corev1.Event, error) {
	out, err := s.client.CoreV1().Events(s.ns).Patch(s.ctx, ev.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
	return out, s.failed("patch", err)
}

// maxSeenErrors bounds the distinct errors remembered for logging.
const maxSeenErrors = 64

func (s *eventSink) failed(verb string, err error) error {
	if err == nil || s.ctx.Err() != nil {
		return err
	}
	if s.failures != nil {
		s.failures.Inc()
	}
	msg := err.Error()
	s.mu.Lock()
	first := !s.seen[msg]
	if first && len(s.seen) < maxSeenErrors {
		s.seen[msg] = true
	}
	s.mu.Unlock()
	if first {
		s.log.Warn("audit kubernetes event failed", "verb", verb, "namespace", s.ns, "err", err)
	}
	return err
}

// newClientset builds the clientset of the events block on an HTTP client
// of its own, whose idle connections closeIdle closes.
func newClientset(ec *eventsConfig) (cs kubernetes.Interface, closeIdle func(), err error) {
	cfg, err := kubeclient.RESTConfig(ec.cluster)
	if err != nil {
		return nil, nil, err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("events client: %w", err)
	}
	cs, err = kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, nil, fmt.Errorf("events client: %w", err)
	}
	return cs, hc.CloseIdleConnections, nil
}

// Needs implements node.Access (KubeRules).
func (s *Sink) Needs() node.Needs { return node.Needs{Kube: s.KubeRules()} }

var _ node.Access = (*Sink)(nil)
