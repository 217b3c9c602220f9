package natsconn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeline/pipeline/internal/backoff"
)

// Status is the state of a connection.
type Status int

// Connection states.
const (
	// Connecting: the first connect has not succeeded yet.
	Connecting Status = iota
	// Connected to a server.
	Connected
	// Reconnecting after the connection was lost; publishes are buffered.
	Reconnecting
	// Closed: the client gave up; Conn dials a new connection with backoff.
	Closed
)

func (s Status) String() string {
	return [...]string{"connecting", "connected", "reconnecting", "closed"}[s]
}

// Options are what a node hands Dial besides the decoded Config.
type Options struct {
	// Name is the client name when Config.Name is empty (the node address).
	Name   string
	Logger *slog.Logger
	// Metrics, when set, gets pipeline_node_nats_connected and
	// pipeline_node_nats_reconnects_total.
	Metrics prometheus.Registerer
	// Report, when set, is called on every status change. It must not block.
	Report func(s Status, detail string)
}

// Conn is a NATS connection that never stays dead: when the client closes
// it (reconnect attempts exhausted, an authorization failure), Conn dials a
// new one with backoff until Close. Callers fetch the current connection
// with JetStream or NC on every use and re-create their subscriptions when
// Changed fires.
type Conn struct {
	cfg Config
	opt Options

	mu      sync.Mutex
	nc      *nats.Conn
	js      jetstream.JetStream
	status  Status
	lastErr string // last connect error reported, to report each once
	closing bool   // Close ran: a connection dialled since is closed, not kept

	changed   chan struct{} // a new or reconnected connection: re-create watches
	closedSig chan struct{} // the client closed the current connection
	stop      chan struct{}
	done      chan struct{}
	embedded  string // listen address of the acquired embedded server

	connected  prometheus.Gauge
	reconnects prometheus.Counter
}

// Dial connects (the first connect may precede the server: it retries in the
// background, reporting Connecting) and starts the supervisor that re-dials
// a closed connection. It fails only on configuration errors (an unreadable
// credentials file, an embedded server that cannot start).
func Dial(cfg Config, opt Options) (*Conn, error) {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Conn{cfg: cfg, opt: opt, changed: make(chan struct{}, 1), closedSig: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	if err := c.registerMetrics(); err != nil {
		return nil, err
	}
	var ns *server.Server
	if cfg.Embedded != nil {
		var err error
		if ns, err = acquire(cfg.Embedded); err != nil {
			c.releaseAll() // c.embedded is not set yet
			return nil, err
		}
		c.embedded = cfg.Embedded.Listen
		opt.Logger.Info("embedded nats-server started", "addr", ns.ClientURL(), "store_dir", cfg.Embedded.StoreDir)
	}
	nc, err := c.connect(ns)
	if err != nil {
		c.releaseAll()
		return nil, err
	}
	c.setConn(nc) // nobody can have closed c yet
	go c.supervise(ns)
	return c, nil
}

func (c *Conn) registerMetrics() error {
	c.connected = prometheus.NewGauge(prometheus.GaugeOpts{Name: "pipeline_node_nats_connected",
		Help: "1 while the node's NATS connection is up, 0 while it connects, reconnects or is re-dialled."})
	c.reconnects = prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_node_nats_reconnects_total",
		Help: "Times the node's NATS connection was re-established after a loss."})
	if c.opt.Metrics == nil {
		return nil
	}
	for _, m := range []prometheus.Collector{c.connected, c.reconnects} {
		if err := c.opt.Metrics.Register(m); err != nil {
			return fmt.Errorf("register nats metrics: %w", err)
		}
	}
	return nil
}

// releaseAll unregisters the metrics and releases the embedded server.
func (c *Conn) releaseAll() {
	if c.opt.Metrics != nil {
		c.opt.Metrics.Unregister(c.connected)
		c.opt.Metrics.Unregister(c.reconnects)
	}
	if c.embedded != "" {
		release(c.embedded)
	}
}

// connect opens one client connection. ns is the embedded server to use in
// process, or nil.
func (c *Conn) connect(ns *server.Server) (*nats.Conn, error) {
	opts, err := c.options()
	if err != nil {
		return nil, err
	}
	url := strings.Join(c.cfg.URLs, ",")
	if ns != nil {
		opts = append(opts, nats.InProcessServer(ns))
		url = ""
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("nats connect: %w", redact(err, c.cfg))
	}
	return nc, nil
}

func (c *Conn) options() ([]nats.Option, error) {
	cfg := c.cfg
	name := cfg.Name
	if name == "" {
		name = c.opt.Name
	}
	opts := []nats.Option{
		nats.Name(name),
		nats.Timeout(cfg.ConnectTimeout),
		nats.ReconnectWait(cfg.ReconnectWait),
		nats.MaxReconnects(cfg.MaxReconnects),
		nats.ReconnectBufSize(cfg.ReconnectBuffer),
		nats.RetryOnFailedConnect(true),
		nats.ConnectHandler(func(*nats.Conn) { c.report(Connected, "connected", true) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			detail := "disconnected"
			if err != nil {
				detail += ": " + redact(err, c.cfg).Error()
			}
			c.report(Reconnecting, detail, false)
		}),
		nats.ReconnectHandler(func(*nats.Conn) {
			c.reconnects.Inc()
			c.report(Connected, "reconnected", true)
		}),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
			// A failed attempt (refused, authorization violation):
			// each distinct error is logged and shown in health once.
			if err != nil {
				c.attemptFailed(redact(err, c.cfg).Error())
			}
		}),
		nats.ClosedHandler(func(*nats.Conn) {
			select {
			case c.closedSig <- struct{}{}:
			default:
			}
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			c.opt.Logger.Warn("nats async error", "err", redact(err, c.cfg))
		}),
	}
	switch {
	case cfg.CredentialsFile != "":
		opts = append(opts, nats.UserCredentials(cfg.CredentialsFile))
	case cfg.NKeySeedFile != "":
		o, err := nats.NkeyOptionFromSeed(cfg.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("nkey_seed_file %s: %w", cfg.NKeySeedFile, redact(err, cfg))
		}
		opts = append(opts, o)
	}
	if cfg.Token != "" {
		opts = append(opts, nats.Token(cfg.Token))
	}
	if cfg.User != "" || cfg.Password != "" {
		opts = append(opts, nats.UserInfo(cfg.User, cfg.Password))
	}
	if cfg.CAFile != "" {
		opts = append(opts, nats.RootCAs(cfg.CAFile))
	}
	if cfg.CertFile != "" {
		opts = append(opts, nats.ClientCert(cfg.CertFile, cfg.KeyFile))
	}
	return opts, nil
}

// supervise re-dials after the client closed the connection, until Close.
func (c *Conn) supervise(ns *server.Server) {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case <-c.closedSig:
		}
		select {
		case <-c.stop:
			return // our own Close
		default:
		}
		c.report(Closed, "connection closed by the client; dialling again", false)
		for attempt := 0; ; attempt++ {
			nc, err := c.connect(ns)
			if err == nil {
				if !c.setConn(nc) {
					return // Close ran while dialling
				}
				c.opt.Logger.Info("nats connection dialled again")
				break
			}
			c.opt.Logger.Warn("nats dial failed", "err", err)
			select {
			case <-c.stop:
				return
			case <-time.After(backoff.Delay(attempt)):
			}
		}
	}
}

// setConn makes nc the current connection. It reports false, having
// closed nc, when Close already ran: Close closes the connection current
// when it runs, so one dialled after that would be nobody's and keep
// reconnecting for ever.
func (c *Conn) setConn(nc *nats.Conn) bool {
	js, _ := jetstream.New(nc) // fails only on invalid options; there are none
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		nc.Close()
		return false
	}
	c.nc, c.js = nc, js
	c.mu.Unlock()
	if nc.Status() == nats.CONNECTED {
		c.report(Connected, "connected", true)
	} else {
		c.report(Connecting, "connecting to "+c.cfg.safeURLs(), false)
	}
	return true
}

func (c *Conn) report(s Status, detail string, changed bool) {
	select {
	case <-c.stop:
		return // our own Close: nothing to report
	default:
	}
	c.mu.Lock()
	same := c.status == s
	c.status = s
	if s == Connected {
		c.lastErr = ""
	}
	c.mu.Unlock()
	if s == Connected {
		c.connected.Set(1)
	} else {
		c.connected.Set(0)
	}
	// Only a transition into Connected is a new connection: nats.go calls
	// the connect handler asynchronously after setConn already reported
	// the same connection, and a second signal would make a watch that
	// just started on it begin again.
	if changed && !same {
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}
	if same {
		return
	}
	if s == Connected {
		c.opt.Logger.Info("nats "+detail, "addr", c.connectedURL())
	} else {
		c.opt.Logger.Warn("nats connection lost", "err", detail)
	}
	if c.opt.Report != nil {
		c.opt.Report(s, detail)
	}
}

func (c *Conn) connectedURL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nc == nil {
		return ""
	}
	if c.embedded != "" {
		// In process: the client's URL is the configured one, not where
		// the embedded server listens.
		return "nats://" + c.embedded
	}
	return c.nc.ConnectedUrlRedacted()
}

// attemptFailed reports a failed (re)connect attempt once per distinct
// error, so health and logs say why the node cannot connect.
func (c *Conn) attemptFailed(msg string) {
	c.mu.Lock()
	if c.lastErr == msg {
		c.mu.Unlock()
		return
	}
	c.lastErr = msg
	st := c.status
	c.mu.Unlock()
	c.opt.Logger.Warn("nats connect attempt failed", "err", msg)
	if c.opt.Report != nil && st != Connected {
		c.opt.Report(st, "connect failed: "+msg)
	}
}

// WaitConnected blocks until the connection is up or ctx ends; then it
// says what the last attempt failed with.
func (c *Conn) WaitConnected(ctx context.Context) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		c.mu.Lock()
		st, last := c.status, c.lastErr
		c.mu.Unlock()
		if st == Connected {
			return nil
		}
		select {
		case <-ctx.Done():
			if last == "" {
				last = ctx.Err().Error()
			}
			return fmt.Errorf("not connected to %s (%s): %s", c.cfg.safeURLs(), st, last)
		case <-tick.C:
		}
	}
}

// Status returns the connection's current state.
func (c *Conn) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

// Changed fires (at most one pending signal) when the connection was
// established, re-established or replaced: watches and consumers bound to
// the old one should be re-created.
func (c *Conn) Changed() <-chan struct{} { return c.changed }

// JetStream returns the JetStream context of the current connection.
func (c *Conn) JetStream() jetstream.JetStream {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.js
}

// NC returns the current client connection.
func (c *Conn) NC() *nats.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nc
}

// Close closes the connection, stops the supervisor and releases the
// embedded server. It flushes buffered publishes for at most a second.
func (c *Conn) Close() {
	close(c.stop)
	c.mu.Lock()
	c.closing = true
	nc := c.nc
	c.mu.Unlock()
	if nc != nil {
		_ = nc.FlushTimeout(time.Second)
		nc.Close()
	}
	<-c.done
	c.connected.Set(0)
	c.releaseAll()
}

// redact removes the configuration's secrets from an error's text (the
// client library may echo a URL with user info or a server's auth reply).
func redact(err error, cfg Config) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	out := msg
	secrets := []string{cfg.Token, cfg.Password}
	for _, raw := range cfg.URLs {
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			p, _ := u.User.Password()
			secrets = append(secrets, p)
		}
	}
	for _, s := range secrets {
		if s != "" {
			out = strings.ReplaceAll(out, s, "[redacted]")
		}
	}
	if out == msg {
		return err
	}
	return errors.New(out)
}
