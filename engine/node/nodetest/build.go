package nodetest

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// Build decodes body (the inside of a block, as HCL text) against spec and
// calls its constructor. Input, when non-nil, is what the node's input emits.
// Diagnostics are returned, not fatal, so tests can check them.
func Build(t testing.TB, spec node.Spec, body string, input *node.Upstream) (node.Built, hcl.Diagnostics) {
	t.Helper()
	src := string(spec.Kind) + ` "` + spec.Type + `" "test" {` + "\n" + body + "\n}\n"
	l := schema.NewLoader()
	cfg, diags := l.ParseSource(t.TempDir()+"/test.hcl", []byte(src), schema.Options{Environ: []string{}})
	if diags.HasErrors() {
		return node.Built{}, diags
	}
	nb := cfg.Nodes[0]
	content, d := schema.Decode(nb.Body, spec.FullBody(), cfg.Ctx, nb.DeclRange)
	diags = append(diags, d...)
	if d.HasErrors() {
		return node.Built{}, diags
	}
	n, d := spec.Build(node.Build{Address: nb.Address(), Name: nb.Name, Content: content, Input: input, Config: cfg})
	return n, append(diags, d...)
}

// MustBuild is Build that fails the test on any error diagnostic. The
// node is in the field of spec.Kind: MustBuild(…).Sink.(*Sink).
func MustBuild(t testing.TB, spec node.Spec, body string, input *node.Upstream) node.Built {
	t.Helper()
	n, diags := Build(t, spec, body, input)
	if diags.HasErrors() {
		t.Fatalf("build %s %s: %s", spec.Kind, spec.Type, diags.Error())
	}
	return n
}

// Env returns an Env logging to the test and registering metrics on reg
// (a fresh registry when nil).
func Env(t testing.TB, reg *prometheus.Registry) (node.Env, *HealthRecorder) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	h := &HealthRecorder{}
	return node.Env{
		Logger:  slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", "test"),
		Metrics: reg,
		Health:  h,
		Address: "test",
	}, h
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// HealthRecorder records health reports.
type HealthRecorder struct {
	mu      sync.Mutex
	History []node.State
	Detail  string
}

// Set implements node.Health.
func (h *HealthRecorder) Set(s node.State, detail string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.History); n == 0 || h.History[n-1] != s {
		h.History = append(h.History, s)
	}
	h.Detail = detail
}

// State returns the last reported state (Pending when none).
func (h *HealthRecorder) State() node.State {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.History) == 0 {
		return node.Pending
	}
	return h.History[len(h.History)-1]
}

// States returns a copy of the state history (consecutive duplicates folded).
func (h *HealthRecorder) States() []node.State {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]node.State(nil), h.History...)
}

// RunTransform runs tr until the test ends; the cleanup cancels it and
// reports an error returned by Run.
func RunTransform(t testing.TB, tr node.Transform, env node.Env, in node.Input, out node.Output) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tr.Run(ctx, env, in, out) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}
