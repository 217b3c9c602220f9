// Package leader runs client-go leader election on a coordination.k8s.io
// Lease and reports, after every acquisition and renewal, until when this
// instance may act as the leader. It knows nothing of sinks: cmd/pipeline
// connects it to the engine's Leadership gate.
package leader

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// Config configures Run.
type Config struct {
	REST      *rest.Config
	Namespace string
	Name      string // of the Lease
	// Identity names this instance in the Lease; unique per process.
	Identity      string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// OnLead is called after every successful acquisition or renewal with
	// the instant until which this instance may act: the time the request
	// was sent plus RenewDeadline. Followers cannot take the lease over
	// before that request's time plus LeaseDuration, which is later.
	OnLead func(until time.Time)
	// OnLose is called when leading stops: the lease was lost, or it is
	// about to be released at shutdown (before the release is written).
	OnLose func()
	Logger *slog.Logger
}

// Identity returns a unique name for this process: the host name (the
// pod name in Kubernetes) and a random suffix.
func Identity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "pipeline"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return host + "_" + hex.EncodeToString(b)
}

// Run competes for the lease until ctx ends. After losing it, it competes
// again. On return the lease is released if this instance held it, so a
// follower takes over at once; call it with a context that ends only after
// the last write.
func Run(ctx context.Context, c Config) error {
	cs, err := kubernetes.NewForConfig(c.REST)
	if err != nil {
		return fmt.Errorf("leader election client: %w", err)
	}
	lock := &reportingLock{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: c.Identity},
	}, cfg: c}
	el, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: c.Name, ReleaseOnCancel: true,
		LeaseDuration: c.LeaseDuration, RenewDeadline: c.RenewDeadline, RetryPeriod: c.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				c.Logger.Info("leading", "lease", lock.Describe())
			},
			OnStoppedLeading: c.OnLose,
			OnNewLeader: func(id string) {
				if id != c.Identity {
					c.Logger.Info("another instance leads", "lease", lock.Describe(), "holder", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	ctx = klog.NewContext(ctx, logr.FromSlogHandler(c.Logger.Handler()))
	for ctx.Err() == nil {
		el.Run(ctx)
		if ctx.Err() == nil {
			c.Logger.Warn("lost the lease; competing again", "lease", lock.Describe())
		}
	}
	return nil
}

// reportingLock is the Lease lock with a report of every write that makes
// or keeps this instance the holder, timed from before the request.
type reportingLock struct {
	resourcelock.Interface
	cfg Config
}

func (l *reportingLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, r, l.Interface.Create)
}

func (l *reportingLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, r, l.Interface.Update)
}

func (l *reportingLock) write(ctx context.Context, r resourcelock.LeaderElectionRecord,
	do func(context.Context, resourcelock.LeaderElectionRecord) error) error {
	ours := r.HolderIdentity == l.cfg.Identity
	if !ours {
		// A release: stop acting before anyone can see the lease free.
		l.cfg.OnLose()
	}
	sent := time.Now()
	if err := do(ctx, r); err != nil {
		return err
	}
	if ours {
		l.cfg.OnLead(sent.Add(l.cfg.RenewDeadline))
	}
	return nil
}

var _ resourcelock.Interface = (*reportingLock)(nil)
