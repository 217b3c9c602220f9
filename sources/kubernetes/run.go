package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/kobject"
	"github.com/pipeline/pipeline/internal/kubeclient"
)

// ErrNotRunning is returned by Lookup when the source is not running.
var ErrNotRunning = errors.New("source is not running")

// Run implements node.Source. It connects (validating certificate,
// reachability and authentication in turn), resolves the resource through
// discovery, then runs the informer until ctx ends, checking alongside its
// first LIST that it may list and watch. Failures of the checks end the
// run with an error (health down; the engine retries); failures after
// them are retried by the informer and reported as degraded, then down.
func (s *Source) Run(ctx context.Context, env node.Env, out node.Output) error {
	m, err := newMetrics(env.Metrics)
	if err != nil {
		return fmt.Errorf("%s: %w", s.address, err)
	}
	mon := &monitor{health: env.Health, log: env.Logger, m: m, disconnectAfter: s.opts.disconnectAfter}
	mon.tick(time.Now())
	conn, res, user, err := s.connect(ctx, env.Logger)
	defer conn.close()
	if err == nil {
		var rc rest.Interface
		if rc, err = newRESTClient(conn); err == nil {
			access := func(ctx context.Context) error { return s.checkAccess(ctx, conn, res, user) }
			if err = s.watch(ctx, env, out, mon, m, rc, res, access); err == nil {
				return nil
			}
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	mon.down(err)
	return fmt.Errorf("%s: %w", s.address, err)
}

// connect validates the connection, resolves the target and names the
// user (if the server says). The caller closes the connection, also on error.
func (s *Source) connect(ctx context.Context, log *slog.Logger) (connection, resolved, string, error) {
	cfg, err := kubeclient.RESTConfig(s.cluster)
	if err != nil {
		return connection{}, resolved{}, "", err
	}
	cfg.WarningHandler = warningLogger{log}
	conn, err := newConnection(cfg)
	if err != nil {
		return conn, resolved{}, "", err
	}
	user, err := checkConnection(ctx, conn)
	if err != nil {
		return conn, resolved{}, "", err
	}
	res, err := s.resolve(conn)
	if err != nil {
		return conn, resolved{}, "", err
	}
	log.Info("connected", "host", cfg.Host, "user", user, "resource", res.gvr.String(), "namespace", res.namespace)
	return conn, res, user, nil
}

// watch runs the informer until ctx ends, or until access, checked
// alongside the first LIST, fails.
func (s *Source) watch(ctx context.Context, env node.Env, out node.Output, mon *monitor, m *metrics, rc rest.Interface, res resolved,
	access func(context.Context) error) error {
	w := &watcher{src: s, log: env.Logger, out: out, m: m, mon: mon, ctx: ctx, res: res,
		index: keyIndex{kobject.NewIndex()}, initial: map[string]node.Record{}, skipped: map[string]string{}}
	if len(s.keyer.Exprs()) == 0 {
		w.index = &idIndex{w: w}
	}
	if s.opts.cached {
		w.cache = newObjectCache(s.opts.cacheTTL, s.pruner, w.fetcher(rc))
	}
	logger := logr.FromSlogHandler(env.Logger.Handler())
	store, ctrl := w.newInformer(rc, &logger)
	w.store = store
	s.setCurrent(w)
	defer s.setCurrent(nil)

	ictx, cancel := context.WithCancel(klog.NewContext(ctx, logger))
	var wg sync.WaitGroup
	// Cancel the informer first, then wait for it: Shutdown-style waits
	// before the cancel would hang.
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { ctrl.RunWithContext(ictx) })
	if err := access(ctx); err != nil {
		return err // the informer is stopped by the deferred cancel
	}
	if s.opts.healthCheck > 0 {
		wg.Go(func() { w.checkLoop(ictx, rc) })
	}
	return w.loop(ctx, ctrl.HasSyncedChecker().Done())
}

func (w *watcher) loop(ctx context.Context, synced <-chan struct{}) error {
	tick := time.NewTicker(min(time.Second, w.src.opts.disconnectAfter/2))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-synced:
			synced = nil
			w.markSynced()
		case now := <-tick.C:
			w.mon.tick(now)
			if w.cache != nil {
				w.cache.sweep(now)
			}
		}
	}
}

// checkLoop runs the active health check (GET /readyz) every
// health_check_interval.
func (w *watcher) checkLoop(ctx context.Context, rc rest.Interface) {
	interval := w.src.opts.healthCheck
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, interval)
		err := rc.Get().AbsPath("/readyz").Do(cctx).Error()
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			err = fmt.Errorf("GET /readyz: %w", err)
		}
		w.mon.checked(err)
	}
}

// watchError receives the errors that end a list-and-watch cycle. Expired
// resource versions and closed streams are routine; everything else
// degrades the source until a call succeeds again.
func (w *watcher) watchError(ctx context.Context, _ *cache.Reflector, err error) {
	switch {
	case ctx.Err() != nil, errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		apierrors.IsResourceExpired(err), apierrors.IsGone(err):
		w.log.Debug("watch closed", "err", err)
	default:
		w.mon.fail(err)
	}
}

// fetcher gets one object, whole, for the lookups of store = "cached".
func (w *watcher) fetcher(rc rest.Interface) func(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	return func(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
		body, err := rc.Get().AbsPath(append(lister{gvr: w.res.gvr, ns: ns}.path(), name)...).DoRaw(ctx)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(body); err != nil {
			return nil, fmt.Errorf("decode %s/%s: %w", ns, name, err)
		}
		return u, nil
	}
}

// warningLogger logs the API server's deprecation warnings through the
// node's logger instead of client-go's global klog.
type warningLogger struct{ log *slog.Logger }

func (w warningLogger) HandleWarningHeader(code int, agent, text string) {
	w.log.Warn("api server warning", "err", text)
}

func (s *Source) setCurrent(w *watcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current = w
}

// Lookup returns a copy of the object whose record has the given key (the
// index_by key, or namespace/name). It is O(1) and safe for concurrent use.
// With store = "memory" it reads the informer cache; with store = "cached"
// it returns the object fetched from the API server within cache_ttl, or
// fetches it. ok is false when no object has the key.
func (s *Source) Lookup(ctx context.Context, key string) (obj *unstructured.Unstructured, ok bool, err error) {
	s.mu.Lock()
	w := s.current
	s.mu.Unlock()
	if w == nil {
		return nil, false, fmt.Errorf("%s: %w", s.address, ErrNotRunning)
	}
	return w.lookup(ctx, key)
}

var (
	_ node.Source         = (*Source)(nil)
	_ rest.WarningHandler = warningLogger{}
)
