package manifests

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/pipeline/pipeline/engine/node"
)

const (
	metricsPort = 9464
	configDir   = "/etc/pipeline"
)

// workload returns the DaemonSet (agent) or Deployment (hub).
func (o Options) workload(host []node.HostNeeds, api bool) (doc, error) {
	pod, why := o.podTemplate(host, api)
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{
		"app.kubernetes.io/name": "pipeline", "app.kubernetes.io/instance": o.Name}}
	if o.Mode == Agent {
		return doc{why: why, obj: &appsv1.DaemonSet{TypeMeta: typeMeta("apps/v1", "DaemonSet"), ObjectMeta: o.meta(o.Name, o.Namespace),
			Spec: appsv1.DaemonSetSpec{Selector: selector, Template: pod}}}, nil
	}
	replicas := int32(2)
	why = append(why, "Two replicas keep their sources synced; only the holder of the Lease writes (leader_election).")
	return doc{why: why, obj: &appsv1.Deployment{TypeMeta: typeMeta("apps/v1", "Deployment"), ObjectMeta: o.meta(o.Name, o.Namespace),
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: selector, Template: pod}}}, nil
}

func (o Options) podTemplate(host []node.HostNeeds, api bool) (corev1.PodTemplateSpec, []string) {
	var caps, paths []string
	for _, h := range host {
		caps = sortedUnique(caps, h.Capabilities)
		paths = sortedUnique(paths, h.Paths)
	}
	c := corev1.Container{
		Name:  "pipeline",
		Image: o.Image,
		Args:  []string{"run", "--listen", "0.0.0.0:9464", "--log-format", "json", configDir},
		Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: metricsPort, Protocol: corev1.ProtocolTCP}},
		// The pod's identity, for the audit sink's Events (their involved
		// object) and its own namespace.
		Env: []corev1.EnvVar{fieldEnv("POD_NAME", "metadata.name"), fieldEnv("POD_NAMESPACE", "metadata.namespace"),
			fieldEnv("POD_UID", "metadata.uid")},
		// A directory mount (never subPath), so a ConfigMap update reaches
		// the running process through kubelet's ..data swap.
		VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: configDir, ReadOnly: true}, {Name: "tmp", MountPath: "/tmp"}},
		LivenessProbe: &corev1.Probe{ProbeHandler: httpGet("/healthz"), InitialDelaySeconds: 5, PeriodSeconds: 10,
			TimeoutSeconds: 2, FailureThreshold: 3},
		ReadinessProbe: &corev1.Probe{ProbeHandler: httpGet("/readyz"), PeriodSeconds: 5, TimeoutSeconds: 2, FailureThreshold: 3},
		Resources:      o.resources(),
	}
	volumes := []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: o.configName()}}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	propagation := corev1.MountPropagationHostToContainer
	for _, p := range paths {
		name := volumeName(p)
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: p, Type: &dirOrCreate}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: p, MountPropagation: &propagation})
	}
	sc, podSC, why := o.security(caps)
	c.SecurityContext = sc
	grace := int64(30)
	spec := corev1.PodSpec{
		ServiceAccountName:            o.Name,
		AutomountServiceAccountToken:  boolPtr(api),
		Containers:                    []corev1.Container{c},
		Volumes:                       volumes,
		SecurityContext:               podSC,
		TerminationGracePeriodSeconds: &grace,
	}
	if o.Mode == Agent {
		// A node agent runs on every node, tainted ones included.
		spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	} else {
		spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100,
				PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname",
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/instance": o.Name}}}}}}}
	}
	meta := metav1.ObjectMeta{Labels: o.labels(), Annotations: map[string]string{
		"prometheus.io/scrape": "true", "prometheus.io/port": "9464", "prometheus.io/path": "/metrics"}}
	return corev1.PodTemplateSpec{ObjectMeta: meta, Spec: spec}, why
}

// security answers the capability and seccomp questions and explains the
// answer in the workload's comment.
//
// Kubernetes grants no ambient capabilities, so a non-root process never
// has an added capability in its effective set: a pod that needs CAP_BPF
// runs as uid 0 with every other capability dropped. The container
// runtime's default seccomp profile may allow bpf() only with
// CAP_SYS_ADMIN (Debian's podman and older containerd profiles do), which
// would make CAP_BPF useless; Unconfined with CAP_BPF alone grants far less
// than SYS_ADMIN. Where the runtime's profile allows bpf() with CAP_BPF,
// --seccomp RuntimeDefault keeps it.
func (o Options) security(caps []string) (*corev1.SecurityContext, *corev1.PodSecurityContext, []string) {
	sc := &corev1.SecurityContext{
		AllowPrivilegeEscalation: boolPtr(false),
		ReadOnlyRootFilesystem:   boolPtr(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	for _, c := range caps {
		sc.Capabilities.Add = append(sc.Capabilities.Add, corev1.Capability(c))
	}
	profile := corev1.SeccompProfileTypeRuntimeDefault
	var why []string
	if slices.Contains(caps, "BPF") {
		profile = corev1.SeccompProfileTypeUnconfined
		why = append(why,
			"eBPF maps: CAP_BPF only (no program is attached, so no NET_ADMIN or PERFMON), /sys/fs/bpf from the host.",
			"Runs as uid 0 with every other capability dropped: Kubernetes grants no ambient capabilities, so a non-root",
			"process would not hold CAP_BPF. seccomp Unconfined: default runtime profiles may allow bpf() only with",
			"CAP_SYS_ADMIN; use --seccomp RuntimeDefault where the node runtime's profile allows it with CAP_BPF.")
		sc.RunAsUser, sc.RunAsNonRoot = int64Ptr(0), boolPtr(false)
	} else {
		sc.RunAsUser, sc.RunAsGroup, sc.RunAsNonRoot = int64Ptr(65532), int64Ptr(65532), boolPtr(true)
	}
	if o.Seccomp != "" {
		profile = corev1.SeccompProfileType(o.Seccomp)
	}
	if o.Privileged {
		sc.Privileged = boolPtr(true)
		sc.AllowPrivilegeEscalation = nil
		why = append(why, "Privileged: asked for with --privileged.")
	}
	podSC := &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: profile}}
	return sc, podSC, why
}

func (o Options) resources() corev1.ResourceRequirements {
	mem := "256Mi"
	if o.Mode == Hub {
		mem = "512Mi" // the hub caches the watched objects of the whole cluster
	}
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)},
	}
}

func httpGet(path string) corev1.ProbeHandler {
	return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("metrics")}}
}

func int64Ptr(i int64) *int64 { return &i }

// fieldEnv is an environment variable set from a field of the pod (the
// downward API).
func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}
