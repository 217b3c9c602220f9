package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/restmapper"

	"github.com/pipeline/pipeline/schema"
)

// resolved is the watch target after discovery.
type resolved struct {
	gvr        kschema.GroupVersionResource
	gvk        kschema.GroupVersionKind
	namespaced bool
	namespace  string // "" = all namespaces (or cluster-scoped)
}

func (r resolved) describe() string {
	s := r.gvr.Resource
	if r.gvr.Group != "" {
		s += "." + r.gvr.Group
	}
	if r.namespace != "" {
		s += " in namespace " + r.namespace
	}
	return s
}

// resolve finds the resource's group, version, kind and scope through
// discovery, so any resource works, custom resources included.
func (s *Source) resolve(c connection) (resolved, error) {
	cached := memory.NewMemCacheClient(c.dc)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	mapping, err := s.mapping(mapper)
	if err != nil {
		if meta.IsNoMatchError(err) {
			err = fmt.Errorf("%w%s", err, s.suggest(cached))
		}
		return resolved{}, fmt.Errorf("resolve %s: %w", s.target.describe(), err)
	}
	r := resolved{gvr: mapping.Resource, gvk: mapping.GroupVersionKind,
		namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace}
	r.namespace, err = s.namespace(r)
	return r, err
}

func (s *Source) mapping(mapper meta.RESTMapper) (*meta.RESTMapping, error) {
	t := s.target
	if t.kind != "" {
		gv, err := kschema.ParseGroupVersion(t.apiVersion)
		if err != nil {
			return nil, err
		}
		return mapper.RESTMapping(kschema.GroupKind{Group: gv.Group, Kind: t.kind}, gv.Version)
	}
	version := t.version
	if version == "" && t.group == "" {
		version = "v1"
	}
	gvk, err := mapper.KindFor(kschema.GroupVersionResource{Group: t.group, Version: version, Resource: t.resource})
	if err != nil {
		return nil, err
	}
	return mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
}

// suggest returns " (did you mean ...?)" from the server's resources.
func (s *Source) suggest(dc discovery.DiscoveryInterface) string {
	lists, _ := dc.ServerPreferredResources() // partial results are fine for a hint
	var names []string
	for _, l := range lists {
		for _, r := range l.APIResources {
			if s.target.kind != "" {
				names = append(names, r.Kind)
			} else {
				names = append(names, r.Name)
			}
		}
	}
	given := s.target.resource
	if s.target.kind != "" {
		given = s.target.kind
	}
	if m := schema.DidYouMean(given, names); m != "" {
		return fmt.Sprintf(" (did you mean %q?)", m)
	}
	return ""
}

func (t target) describe() string {
	if t.kind != "" {
		return fmt.Sprintf("kind %q (api_version %q)", t.kind, t.apiVersion)
	}
	s := fmt.Sprintf("resource %q", t.resource)
	if t.group != "" {
		s += fmt.Sprintf(" in group %q", t.group)
	}
	return s
}

// namespace decides the namespace to watch once the scope is known.
func (s *Source) namespace(r resolved) (string, error) {
	ns := s.target.namespace
	if s.target.ownNamespace {
		b, err := os.ReadFile(s.nsFile)
		if err != nil {
			return "", fmt.Errorf("namespaced_watch: read the pod's namespace (not running in a pod?): %w", err)
		}
		if ns = strings.TrimSpace(string(b)); ns == "" {
			return "", fmt.Errorf("namespaced_watch: %s is empty", s.nsFile)
		}
	}
	switch {
	case !r.namespaced && ns != "":
		return "", fmt.Errorf("%s is cluster-scoped: remove namespace", r.gvr.Resource)
	case r.namespaced && s.target.name != "" && ns == "":
		return "", fmt.Errorf("name %q: a single-resource watch of namespaced %s needs a namespace", s.target.name, r.gvr.Resource)
	}
	return ns, nil
}

// checkAccess asks the server whether the authenticated user may list and
// watch the target, so that missing RBAC fails at start with a clear error
// instead of as endless watch errors.
func (s *Source) checkAccess(ctx context.Context, c connection, r resolved, user string) error {
	client, err := authzclient.NewForConfigAndClient(c.cfg, c.hc)
	if err != nil {
		return fmt.Errorf("authorization client: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: r.namespace, Verb: verb,
				Group: r.gvr.Group, Resource: r.gvr.Resource, Name: s.target.name}}}
		res, err := client.SelfSubjectAccessReviews().Create(cctx, review, metav1.CreateOptions{})
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
			return nil // reviews unavailable: the watch itself will tell
		case err != nil:
			return &ConnectError{Phase: classify(err), Host: c.cfg.Host, Err: err}
		case !res.Status.Allowed:
			who := "the configured credentials"
			if user != "" {
				who = fmt.Sprintf("user %q", user)
			}
			return &ConnectError{Phase: PhaseAuthentication, Host: c.cfg.Host,
				Err: fmt.Errorf("%w: %s may not %s %s", errNotAllowed, who, verb, r.describe())}
		}
	}
	return nil
}

var errNotAllowed = errors.New("not allowed")
