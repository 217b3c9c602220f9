package kubernetes

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"

	"github.com/pipeline/pipeline/internal/kubeclient"
)

// Phase names the step of connection validation that failed.
type Phase string

// Connection validation phases, in order.
const (
	// PhaseCertificate: the CA or client certificate cannot be loaded, or
	// the server's certificate does not verify.
	PhaseCertificate Phase = "certificate"
	// PhaseReachability: the server cannot be reached or does not answer.
	PhaseReachability Phase = "reachability"
	// PhaseAuthentication: the server rejects the credentials, or the
	// authenticated user may not list and watch the resource.
	PhaseAuthentication Phase = "authentication"
)

// ConnectError is a failed connection check. Its text names the phase and
// the server, never a credential.
type ConnectError struct {
	Phase Phase
	Host  string
	Err   error
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("connect to %s: %s: %v", e.Host, e.Phase, e.Err)
}

func (e *ConnectError) Unwrap() error { return e.Err }

const checkTimeout = 15 * time.Second

// CheckCredentials loads the credentials Run would use, without network
// I/O, and returns an error wrapping kubeclient.ErrNoCredentials, naming
// every place looked at, when none can exist. Retrying cannot help then,
// so `pipeline run` fails at start with it.
func (s *Source) CheckCredentials() error {
	_, err := kubeclient.RESTConfig(s.cluster)
	if errors.Is(err, kubeclient.ErrNoCredentials) {
		return fmt.Errorf("%s: %w", s.address, err)
	}
	return nil
}

// connection is a client configuration and the one HTTP client (one
// connection pool) that every client of a run shares. Its dialer keeps the
// run's connections, so that close ends them all, watches included, when
// the run ends.
type connection struct {
	cfg    *rest.Config
	hc     *http.Client
	dialer *connrotation.Dialer
	dc     *discovery.DiscoveryClient // for the checks and resolve
}

// newConnection builds the run's HTTP client. The custom dialer also keeps
// client-go from sharing the transport with other runs.
func newConnection(cfg *rest.Config) (connection, error) {
	d := connrotation.NewDialer((&net.Dialer{}).DialContext)
	cfg.Dial = d.DialContext
	hc, err := rest.HTTPClientFor(cfg) // fails on TLS material that does not load
	if err != nil {
		return connection{}, &ConnectError{Phase: PhaseCertificate, Host: cfg.Host, Err: err}
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, hc)
	if err != nil {
		return connection{}, &ConnectError{Phase: PhaseCertificate, Host: cfg.Host, Err: err}
	}
	return connection{cfg: cfg, hc: hc, dialer: d, dc: dc}, nil
}

// close closes every connection of the run.
func (c connection) close() {
	if c.dialer != nil {
		c.dialer.CloseAll()
	}
}

// checkConnection validates a connection in phases: certificate (the TLS
// material loaded in newConnection; the server's certificate verifies),
// reachability (GET /version answers) and authentication (a
// SelfSubjectReview). It returns the authenticated user's name when the
// server tells it.
func checkConnection(ctx context.Context, c connection) (string, error) {
	fail := func(p Phase, err error) (string, error) {
		return "", &ConnectError{Phase: p, Host: c.cfg.Host, Err: err}
	}
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	if _, err := c.dc.RESTClient().Get().AbsPath("/version").Do(cctx).Raw(); err != nil {
		return fail(classify(err), explain(err))
	}
	ac, err := authnclient.NewForConfigAndClient(c.cfg, c.hc)
	if err != nil {
		return fail(PhaseAuthentication, err)
	}
	review, err := ac.SelfSubjectReviews().Create(cctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	switch {
	case err == nil:
		return review.Status.UserInfo.Username, nil
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err):
		return "", nil // an old server, or reviews disabled: /version already authenticated us
	}
	return fail(classify(err), explain(err))
}

// explain adds what client-go's messages leave implicit.
func explain(err error) error {
	if apierrors.IsUnauthorized(err) {
		return fmt.Errorf("the server rejected the credentials (401 Unauthorized): %w", err)
	}
	return err
}

// classify names the phase an HTTP client error belongs to.
func classify(err error) Phase {
	var unknownCA x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var hostname x509.HostnameError
	var verify *tls.CertificateVerificationError
	var record tls.RecordHeaderError
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &invalid), errors.As(err, &hostname),
		errors.As(err, &verify), errors.As(err, &record):
		return PhaseCertificate
	case apierrors.IsUnauthorized(err), apierrors.IsForbidden(err):
		return PhaseAuthentication
	}
	return PhaseReachability // refused, timed out, reset, or the server failed to answer
}

var _ error = (*ConnectError)(nil)
