package kubernetes

import (
	"time"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/kobject"
	"github.com/pipeline/pipeline/schema"
)

// Attributes of source "kubernetes". selector, field_selector, index_by and
// ignore_fields are shared with source "files" (internal/kobject).
var (
	clusterAttr = schema.Ref("cluster", "cluster").
			Doc("The cluster block to connect with, as a reference. Absent: the pod's service account when KUBERNETES_SERVICE_HOST is set, else $KUBECONFIG or ~/.kube/config.").
			Example("cluster.prod")
	resourceAttr = schema.String("resource").
			Doc("Plural resource name to watch, such as `pods` or `ingresses`. Use this or api_version + kind.").Example(`"pods"`)
	groupAttr = schema.String("group").
			Doc("API group of resource; empty is the core group.").Example(`"networking.k8s.io"`)
	versionAttr = schema.String("version").
			Doc("API version of resource. Default: `v1` in the core group, the server's preferred version in other groups.").Example(`"v1"`)
	apiVersionAttr = schema.String("api_version").
			Doc("apiVersion of the kind to watch, resolved through discovery (CRDs included).").Example(`"apps/v1"`)
	kindAttr = schema.String("kind").
			Doc("Kind to watch, with api_version: `Deployment`, or a custom resource's kind.").Example(`"Deployment"`)
	namespaceAttr = schema.String("namespace").Default("", `""`).
			Doc("Namespace to watch; empty watches every namespace.").Example(`"shop"`)
	ownNamespaceAttr = schema.Bool("namespaced_watch").Default(false, "false").
				Doc("Watch only the namespace the pipeline's pod runs in, read from its service account. Fails when not running in a pod.")
	nameAttr = schema.String("name").
			Doc("Watch one named object (a single-resource watch, e.g. a ConfigMap holding configuration). Namespaced resources need a namespace.").
			Example(`"haproxy-config"`)
	metadataOnlyAttr = schema.Bool("metadata_only").Default(false, "false").
				Doc("Receive only metadata (names, labels, annotations, owners): far less memory and traffic when the pipeline reads nothing else.")
	storeAttr = schema.Enum("store", "memory", "cached").Default("memory", `"memory"`).
			Doc("`memory` keeps every object in the informer cache. `cached` keeps only names and keys; records are still emitted whole, and Lookup fetches the object from the API server (kept for cache_ttl).")
	cacheTTLAttr = schema.Duration("cache_ttl").Default(2*time.Minute, `"2m"`).
			Doc("With store = \"cached\": how long a fetched object is kept; every access renews it and every change of the object drops it.")
	initialSyncAttr = schema.Enum("initial_sync", "list", "watch_list").Default("list", `"list"`).
			Doc("How the initial state is read. `list`: one consistent LIST, the faster on the clusters measured. `watch_list`: a stream of watch events (`sendInitialEvents`) that the API server serves from its cache object by object, without building the whole list in its memory; a server that refuses it is read with one LIST instead. See docs/kubernetes-source.md for how to choose.")
	syncChangesAttr = schema.Bool("call_on_change_during_sync").Default(false, "false").
			Doc("Emit changes as they arrive during the initial sync instead of one complete state when it ends.")
	disconnectAfterAttr = schema.Duration("disconnect_after").Default(30*time.Second, `"30s"`).
				Doc("How long watch errors may last (health degraded) before the source reports itself disconnected (down).")
	healthCheckAttr = schema.Duration("health_check_interval").Default(10*time.Second, `"10s"`).
			Doc("Interval of the active check of the API server (`/readyz`); a failed check reports the source down until one succeeds. \"0s\" disables it.")
)

// Spec declares source "kubernetes".
func Spec() node.Spec {
	return node.Spec{
		Kind:    node.KindSource,
		Type:    "kubernetes",
		Summary: "Watches Kubernetes objects of any resource, custom resources included.",
		Doc: "Each object becomes a record keyed by namespace/name (or index_by) whose value is the object, " +
			"after ignore_fields. The whole initial state is emitted at once when the initial list completes; " +
			"later changes are emitted as they arrive, and updates that change nothing after ignore_fields are not emitted. " +
			"An object that leaves the selector (a label change) is deleted. Health: pending until synced, healthy, " +
			"degraded on watch errors, down after disconnect_after of errors or when the health check fails; it recovers by itself.",
		Body: schema.Block{
			Attrs: []schema.Attribute{clusterAttr, resourceAttr, groupAttr, versionAttr, apiVersionAttr, kindAttr,
				namespaceAttr, ownNamespaceAttr, nameAttr, kobject.SelectorAttr, kobject.FieldSelectorAttr,
				kobject.IndexByAttr, kobject.IgnoreFieldsAttr, metadataOnlyAttr, storeAttr, cacheTTLAttr,
				initialSyncAttr, syncChangesAttr, disconnectAfterAttr, healthCheckAttr},
			Blocks: []*schema.BlockType{kobject.SelectorBlock},
		},
		Output:    node.Objects,
		NewSource: newSource,
	}
}
