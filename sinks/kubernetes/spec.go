package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

var (
	clusterAttr = schema.Ref("cluster", "cluster").
			Doc("The cluster block to connect with, as a reference; its qps and burst bound the sink's requests. Absent: the pod's service account when KUBERNETES_SERVICE_HOST is set, else $KUBECONFIG or ~/.kube/config.").
			Example("cluster.prod")
	objectAttr = schema.Expr("object", "record").Required().
			Doc("The object each record becomes, an expression over the record (`record.key`, `record.value`): an object constructor whose `apiVersion` and `kind` are constant strings and whose `metadata` sets `name` (and `namespace` for a namespaced kind). Every object of one sink is of one kind. Fields are checked against the API server's schema when the sink opens and at plan; a field the kind does not have is named in the error.").
			Example(`{ apiVersion = "v1", kind = "ConfigMap", metadata = { name = record.key, namespace = "shop" }, data = { ip = record.value.ip } }`)
	managerAttr = schema.String("field_manager").Default("", `"pipeline.NAME"`).
			Doc("Field manager of the server-side applies: the sink owns exactly the fields its objects set, and fields owned by other managers are left alone.").Example(`"pipeline.netpol"`)
	forceAttr = schema.Bool("force_conflicts").Default(false, "false").
			Doc("Take over fields another manager applied with another value. With false such an object fails with an error naming the other manager, and the other objects go on. Fields changed by an update (kubectl edit or replace, a client's Update) are restored either way.")
	labelAttr = schema.String("owner_label").Default(defaultLabel, `"`+defaultLabel+`"`).
			Doc("Key of the label every written object carries; Actual lists and prune deletes only objects with this label set to owner_value, never others.")
	valueAttr = schema.String("owner_value").Default("", `"pipeline.NAME.HASH"`).
			Doc("Value of owner_label: the sink's identity. The sink lists, applies over and deletes only objects carrying it and written by its field_manager. The default ends in a hash of the configuration directory's absolute path and the sink's address, so two configurations never share it by accident; set it when the same configuration runs from another directory (a pod, another checkout) and must own the same objects.").Example(`"shop-pipeline.netpol"`)
	adoptAttr = schema.Bool("adopt").Default(false, "false").
			Doc("Take over an object that exists and is not the sink's (made by hand or by another tool, or carrying another owner_value) when a record wants its name: it is applied over and from then on owned, pruned included. With false the apply of that object fails with an error naming its owner, and plan shows it so.")
	ownerRefAttr = schema.Expr("owner_reference", "record").
			Doc("An object whose ownerReference each written object carries (controller = true), so the API server's garbage collector deletes the object with its owner: an expression over the record giving an object with `apiVersion`, `kind`, `metadata.name` and `metadata.uid`, usually `record.value` of a kubernetes source. The owner must be in the object's namespace (or cluster-scoped): checked at validate when both namespaces are constants, else per record, where an object with an owner elsewhere fails with an error naming it.").
			Example("record.value")
	namespacesAttr = schema.StringList("namespaces").
			Doc("Namespaces the sink may write in: objects elsewhere fail, Actual lists only these, and `pipeline manifests` grants Roles in them. Absent: every namespace (a ClusterRole).").Example(`["shop"]`)
	statusAttr = schema.Bool("status").Default(false, "false").
			Doc("Write the status subresource of existing objects (a custom resource's status that the pipeline computes) instead of whole objects: the object expression sets `status`; nothing is created, and a record going away releases the status fields the sink set.")
	inFlightAttr = schema.Int("max_in_flight").Default(16, "16").
			Doc("Requests in flight at once (1 to 256); the cluster block's qps and burst bound their rate.")
	timeoutAttr = schema.Duration("request_timeout").Default(30*time.Second, `"30s"`).
			Doc("Time limit of one request. 429 and 5xx answers are retried by client-go as the server asks, then by the sink loop with backoff.")
)

const defaultLabel = "pipeline.io/owner"

// Spec declares sink "kubernetes".
func Spec() node.Spec {
	return node.Spec{
		Kind:    node.KindSink,
		Type:    "kubernetes",
		Summary: "Writes objects built from records with server-side apply and prunes the objects it owns that no record wants.",
		Doc: "Each record becomes one object (its key is the object's namespace/name). Objects are written with server-side apply " +
			"under field_manager and carry the label owner_label = owner_value; at start and every `resync` the sink lists the objects with that " +
			"label (one LIST from the API server's cache) and writes only those that differ from what was last applied: a hand-edited " +
			"field the sink set is restored, a hand-deleted object is created again, and an object of the sink's " +
			"no record wants is deleted (prune). An object is the sink's when it carries the label and its managedFields hold the sink's " +
			"field manager: one that merely copies the label is never deleted, and one that exists and is not the sink's is never applied " +
			"over unless adopt = true. A rejected object (422, an admission denial) is counted, logged with the server's " +
			"message and shown by `pipeline explain`, while the others go on. While the API server cannot be reached the sink is degraded " +
			"and deletes nothing. `pipeline plan` shows each create and update as the API server computes it (a server-side apply with dryRun=All, " +
			"defaulting and admission included), field by field.",
		Body: schema.Block{Attrs: []schema.Attribute{clusterAttr, objectAttr, managerAttr, forceAttr, labelAttr, valueAttr,
			adoptAttr, ownerRefAttr, namespacesAttr, statusAttr, inFlightAttr, timeoutAttr}},
		NewSink: newSink,
	}
}

// Sink is a configured kubernetes sink. It holds no connection: Open does.
type Sink struct {
	address    string
	name       string
	cluster    *schema.Cluster
	obj        objectExpr
	ctx        *hcl.EvalContext
	ownerRef   hcl.Expression
	manager    string
	force      bool
	label      string
	value      string
	adopt      bool
	namespaces []string
	status     bool
	inFlight   int
	timeout    time.Duration
}

func newSink(b node.Build) (node.Sink, hcl.Diagnostics) {
	s := &Sink{address: b.Address, name: b.Name, ctx: b.Content.Ctx}
	var diags hcl.Diagnostics
	add := func(d hcl.Diagnostics) { diags = append(diags, d...) }
	s.cluster = decodeCluster(b, &diags)
	expr, _, d := objectAttr.Get(b.Content)
	add(d)
	if expr != nil && !d.HasErrors() {
		s.obj, d = checkObject(expr, b.Content.Ctx)
		add(d)
	}
	if ownerRefAttr.Has(b.Content) {
		s.ownerRef, _, d = ownerRefAttr.Get(b.Content)
		add(d)
		if s.ownerRef != nil && !d.HasErrors() {
			add(checkOwnerNamespace(s.ownerRef, s.obj, b.Content.Ctx))
		}
	}
	s.manager = managerAttr.Read(b.Content, &diags)
	if s.manager == "" {
		s.manager = "pipeline." + b.Name
	}
	s.force = forceAttr.Read(b.Content, &diags)
	s.label = labelAttr.Read(b.Content, &diags)
	s.value = valueAttr.Read(b.Content, &diags)
	if s.value == "" {
		s.value = defaultOwnerValue(b)
	}
	s.adopt = adoptAttr.Read(b.Content, &diags)
	add(checkLabel(s.label, s.value, b.Content))
	s.namespaces = namespacesAttr.Read(b.Content, &diags)
	sort.Strings(s.namespaces)
	if ns := s.obj.namespace; ns != "" && len(s.namespaces) > 0 && !contains(s.namespaces, ns) {
		add(hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Namespace not allowed",
			Detail:  fmt.Sprintf("The object's namespace %q is not one of namespaces (%s). Add it there, or write the object elsewhere.", ns, strings.Join(s.namespaces, ", ")),
			Subject: s.obj.namespaceRange.Ptr()}})
	}
	s.status = statusAttr.Read(b.Content, &diags)
	n, rng, d := inFlightAttr.Get(b.Content)
	add(d)
	if !d.HasErrors() && (n < 1 || n > 256) {
		add(hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Value out of range",
			Detail: "max_in_flight must be between 1 and 256.", Subject: rng.Ptr()}})
	}
	s.inFlight = int(n)
	s.timeout = timeoutAttr.Read(b.Content, &diags)
	return s, diags
}

// defaultOwnerValue is pipeline.NAME.HASH: HASH is derived from the
// configuration directory's absolute path and the sink's address, so two
// configurations holding a sink of the same name (each a
// sink "kubernetes" "default_deny") never share an identity, while every
// instance and restart of one configuration does. NAME is cut to keep the
// value within a label value's 63 characters.
func defaultOwnerValue(b node.Build) string {
	dir := ""
	if b.Config != nil {
		dir = b.Config.Dir
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	sum := sha256.Sum256([]byte(dir + "\x00" + b.Address))
	hash := hex.EncodeToString(sum[:5])
	name := b.Name
	if max := validation.LabelValueMaxLength - len("pipeline.") - len(hash) - 1; len(name) > max {
		name = name[:max]
	}
	return "pipeline." + name + "." + hash
}

// legacyOwnerValue is the owner_value earlier versions used by default,
// which two configurations with a sink of the same name shared.
func legacyOwnerValue(name string) string { return "pipeline." + name }

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// decodeCluster resolves cluster = cluster.NAME against the loaded cluster blocks.
func decodeCluster(b node.Build, diags *hcl.Diagnostics) *schema.Cluster {
	if !clusterAttr.Has(b.Content) {
		return nil
	}
	tr, rng, d := clusterAttr.Get(b.Content)
	*diags = append(*diags, d...)
	if d.HasErrors() {
		return nil
	}
	if b.Config == nil {
		return nil
	}
	c, d := b.Config.LookupCluster(tr, rng)
	*diags = append(*diags, d...)
	return c
}
