package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/cmd/pipeline/admin"
	"github.com/pipeline/pipeline/cmd/pipeline/console"
	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/internal/ctyconv"
	"github.com/pipeline/pipeline/internal/redact"
	"github.com/pipeline/pipeline/schema"
)

type runFlags struct {
	vars       []string
	queueLimit int
	listen     string
	allowHosts []string
	logFormat  string
	logLevel   string
	reload     reloadFlags
	// onListen, when set, receives the HTTP address once serving (tests).
	onListen func(addr string)
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [-var name=value]... [--listen ADDR] PATH...",
		Short: "Run the pipeline: keep every sink equal to what the sources say",
		Long: "Compiles the configuration (as validate does) and runs it until SIGINT or SIGTERM: sources watch,\n" +
			"transforms compute, and sinks reconcile their targets with what the sources say. A failing node is\n" +
			"restarted with backoff and never stops the others. On shutdown, in-flight changes drain to the sinks\n" +
			"(at most 5s); targets keep their state.\n\n" +
			"Variables: -var name=value, or the environment variable PIPELINE_VAR_name (-var wins).\n" +
			"HTTP on --listen: /metrics (Prometheus), /healthz, and /readyz (200 once every source synced and\n" +
			"every sink is healthy; its JSON body names each node's state and the last reload), /reloads,\n" +
			"/tap for `pipeline tap`, and the web console at /. It answers requests for IP addresses and\n" +
			"localhost only (against DNS rebinding); --allow-host adds a name, such as a proxy's.\n" +
			"The configuration reloads when its files change (--watch=false: only on SIGHUP): a new graph is\n" +
			"validated and started beside the running one, unchanged nodes keep running, and a failure\n" +
			"leaves the running graph untouched. GET /reloads lists the latest reloads.\n" +
			"Each node's input queue holds --queue-limit deltas; a consumer that falls further behind is\n" +
			"resynchronised from a snapshot (pipeline_node_overflow_resyncs_total), never fed dropped events.",
		Example: "  pipeline run examples/flagship\n" +
			"  PIPELINE_VAR_kubeconfig=$HOME/.kube/config pipeline run --log-level debug examples/demo",
		Args: needPaths(),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runPipeline(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), args, f)
		},
	}
	cmd.Flags().StringArrayVar(&f.vars, "var", nil, "set a variable: -var name=value (repeatable); PIPELINE_VAR_name also works")
	cmd.Flags().IntVar(&f.queueLimit, "queue-limit", engine.DefaultQueueLimit, "deltas each node's input queue holds before the node is resynchronised from a snapshot")
	cmd.Flags().StringVar(&f.listen, "listen", "127.0.0.1:9464", "address of /metrics, /healthz and /readyz; empty disables")
	cmd.Flags().StringArrayVar(&f.allowHosts, "allow-host", nil, "a host name the admin endpoint and console answer for besides IP addresses and localhost, such as the name of a proxy in front (repeatable)")
	cmd.Flags().StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	cmd.Flags().StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	reloadFlagSet(cmd, &f.reload)
	return cmd
}

func runPipeline(ctx context.Context, stdout, stderr io.Writer, paths []string, f runFlags) error {
	if f.queueLimit < 0 {
		return fmt.Errorf("--queue-limit %d: give a number of deltas, or 0 for the default %d", f.queueLimit, engine.DefaultQueueLimit)
	}
	// SIGHUP asks for a reload. It is caught from the start: one sent while
	// the configuration loads waits for the reloader instead of ending the
	// process (the signal's default action).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	l := load(paths, f.vars)
	if l.diags.HasErrors() {
		view.WriteDiagsText(stderr, l.files, l.diags)
		return exitError{1}
	}
	if err := preflight(l.graph); err != nil {
		return err
	}
	secrets := redact.New(l.cfg.Sensitive)
	logger, err := newLogger(stderr, f.logFormat, f.logLevel, secrets)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	engineReg := prometheus.NewRegistry() // apart, so the console gathers only the engine's metrics
	metrics := engine.NewMetrics(engineReg, version)
	metrics.SetGeneration(1)
	opts := engine.RunOptions{Logger: logger, Metrics: metrics, QueueLimit: f.queueLimit}
	if le := l.cfg.LeaderElection; le != nil {
		lead, stop, err := startLeaderElection(le, logger, reg)
		if err != nil {
			return err
		}
		// Deferred before the HTTP server's shutdown and after the
		// runtime returns: the lease is released only once writes stopped.
		defer stop()
		opts.Leader = lead
	}
	rt, err := engine.NewRuntime(l.graph, opts)
	if err != nil {
		return err
	}
	var con *console.Console
	if f.listen != "" {
		keyFile, removeKey, err := writeFingerprintKey("")
		if err != nil {
			logger.Warn("plan --against will show nodes holding a secret as rebuilt", "err", err)
		} else {
			defer removeKey()
		}
		con = console.New(console.Options{Runtime: rt, Graph: l.graph, Engine: engineReg, Secrets: secrets, Logger: logger})
		srv, err := serveHTTP(f.listen, prometheus.Gatherers{reg, engineReg, metrics.NodeGatherer()}, rt, secrets, keyFile,
			con.Handler(), f.allowHosts...)
		if err != nil {
			return err
		}
		defer shutdownHTTP(srv)
		cctx, stopConsole := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = con.Run(cctx) }()
		defer func() { stopConsole(); <-done }()
		logger.Info("serving metrics and health", "addr", srv.Addr)
		logger.Info("serving the web console", "url", consoleURL(srv.Addr))
		if f.onListen != nil {
			f.onListen(srv.Addr)
		}
	}
	logger.Info("running", "nodes", len(l.graph.Nodes), "config_generation", 1)
	rctx, stopReloads := context.WithCancel(ctx)
	rl := newReloader(paths, schema.Options{Vars: f.vars}, registry(), rt, l, secrets, logger, f.reload.timeout)
	if con != nil {
		rl.onApplied = con.SetGraph
	}
	defer startReloads(rctx, rl, f.reload, hup)()
	defer stopReloads()
	return rt.Run(ctx)
}

// credentialChecker is a node that can tell, before running, that its
// credentials cannot exist (the kubernetes source: no kubeconfig anywhere).
type credentialChecker interface {
	CheckCredentials() error
}

// preflight fails at start on what retrying cannot fix, naming every node.
func preflight(g *graph.Graph) error {
	var errs []error
	for _, n := range g.Nodes {
		if c, ok := n.Impl().(credentialChecker); ok {
			if err := c.CheckCredentials(); err != nil {
				errs = append(errs, fmt.Errorf("%w (%s)", err, schema.Pos(n.Block.DeclRange)))
			}
		}
	}
	return errors.Join(errs...)
}

func newLogger(w io.Writer, format, level string, secrets *redact.Redactor) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: redactor(secrets)}
	switch format {
	case "text":
		if view.Colourful(w) {
			w = colourWriter{w}
		}
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", format)
}

// redactor masks every secret that reaches a log attribute.
func redactor(r *redact.Redactor) func([]string, slog.Attr) slog.Attr {
	return func(_ []string, a slog.Attr) slog.Attr {
		if v, ok := a.Value.Any().(cty.Value); ok && a.Value.Kind() == slog.KindAny {
			// The shared renderer: marked parts become "(sensitive)".
			a = slog.String(a.Key, ctyconv.String(schema.Masked(v)))
		}
		if r.Empty() {
			return a
		}
		var s string
		switch a.Value.Kind() {
		case slog.KindString:
			s = a.Value.String()
		case slog.KindAny:
			if err, ok := a.Value.Any().(error); ok {
				s = err.Error()
			} else {
				return a
			}
		default:
			return a
		}
		if m := r.String(s); m != s {
			return slog.String(a.Key, m)
		}
		return a
	}
}

// serveHTTP serves the admin endpoint; keyFile is where the fingerprint
// key is for GET /graph to name (fpkey.go). page, when not nil, is the web
// console (cmd/pipeline/console): GET / and /console/. It answers only
// for IP addresses, localhost and the names of addr and allowHosts
// (console.HostGuard).
func serveHTTP(addr string, g prometheus.Gatherer, rt *engine.Runtime, secrets *redact.Redactor, keyFile string,
	page http.Handler, allowHosts ...string) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin endpoint: %w", err) // the error names the address
	}
	srv := &http.Server{Addr: ln.Addr().String(), Handler: console.HostGuard(admin.Handler(g, rt, secrets, keyFile, page), addr, allowHosts),
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second,
		IdleTimeout: 60 * time.Second, MaxHeaderBytes: 16 << 10}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "http server: %v\n", err)
		}
	}()
	return srv, nil
}

func shutdownHTTP(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
}
