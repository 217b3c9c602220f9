package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/pipeline/pipeline/engine"
)

type runFlags struct {
	vars      []string
	listen    string
	logFormat string
	logLevel  string
	// onListen, when set, receives the HTTP address once serving (tests).
	onListen func(addr string)
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [-var name=value]... [--listen ADDR] PATH...",
		Short: "Run the pipeline: keep every sink equal to what the sources say",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runPipeline(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), args, f)
		},
	}
	cmd.Flags().StringArrayVar(&f.vars, "var", nil, "set a variable: -var name=value (repeatable)")
	cmd.Flags().StringVar(&f.listen, "listen", "127.0.0.1:9464", "address of /metrics, /healthz and /readyz; empty disables")
	cmd.Flags().StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	cmd.Flags().StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	return cmd
}

func runPipeline(ctx context.Context, stdout, stderr io.Writer, paths []string, f runFlags) error {
	l := load(paths, f.vars)
	if l.diags.HasErrors() {
		writeDiagsText(stderr, l.files, l.diags)
		return exitError{1}
	}
	logger, err := newLogger(stderr, f.logFormat, f.logLevel, l.cfg.Sensitive)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := engine.NewMetrics(reg, version)
	metrics.SetGeneration(1)
	opts := engine.RunOptions{Logger: logger, Metrics: metrics}
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
	if f.listen != "" {
		srv, err := serveHTTP(f.listen, prometheus.Gatherers{reg, metrics.NodeGatherer()}, rt)
		if err != nil {
			return err
		}
		defer shutdownHTTP(srv)
		logger.Info("serving metrics and health", "addr", srv.Addr)
		if f.onListen != nil {
			f.onListen(srv.Addr)
		}
	}
	logger.Info("running", "count", len(l.graph.Nodes), "generation", 1)
	return rt.Run(ctx)
}

func newLogger(w io.Writer, format, level string, secrets []string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: redactor(secrets)}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", format)
}

// redactor replaces every secret value that reaches a log attribute.
func redactor(secrets []string) func([]string, slog.Attr) slog.Attr {
	var live []string
	for _, s := range secrets {
		if len(s) >= 4 {
			live = append(live, s)
		}
	}
	return func(_ []string, a slog.Attr) slog.Attr {
		if len(live) == 0 {
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
		for _, secret := range live {
			s = strings.ReplaceAll(s, secret, "(sensitive)")
		}
		return slog.String(a.Key, s)
	}
}

func serveHTTP(addr string, g prometheus.Gatherer, rt *engine.Runtime) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		r := rt.Readiness()
		w.Header().Set("Content-Type", "application/json")
		if !r.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(r)
	})
	srv := &http.Server{Addr: ln.Addr().String(), Handler: mux, ReadHeaderTimeout: 5 * time.Second}
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
