package console

import (
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/internal/redact"
)

//go:embed assets
var assets embed.FS

// Interval is how often the console samples the running graph and sends
// every open page a frame.
const Interval = time.Second

// Options are what a Console reads.
type Options struct {
	Runtime *engine.Runtime
	// Graph is the graph the runtime started with; SetGraph replaces it
	// after an applied reload.
	Graph *graph.Graph
	// Engine gathers the engine's own metrics (engine.NewMetrics'
	// registry); the console reads its per-node counters in process.
	Engine  prometheus.Gatherer
	Secrets *redact.Redactor
	Logger  *slog.Logger
	// MaxPages bounds the pages following live updates at once (0: 64);
	// one more gets 503.
	MaxPages int
}

// Console samples the running graph once per Interval and serves the page,
// its graph, node details and the live stream of frames.
type Console struct {
	opts  Options
	slots chan struct{}

	mu      sync.Mutex
	version uint64
	graph   []byte // JSON of the graphView
	nodes   map[string]*nodeInfo
	hist    map[string]*ring
	prev    map[string]counters
	prevAt  time.Time
	last    []byte // latest frame as an SSE message
	subs    map[chan []byte]struct{}
}

// New returns a console of opts.Graph. Call Run to sample.
func New(opts Options) *Console {
	if opts.MaxPages <= 0 {
		opts.MaxPages = 64
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Console{opts: opts, slots: make(chan struct{}, opts.MaxPages), hist: map[string]*ring{},
		subs: map[chan []byte]struct{}{}}
	c.SetGraph(opts.Graph)
	return c
}

// SetGraph hands the console the graph of an applied reload. Nodes that
// kept their address keep their history.
func (c *Console) SetGraph(g *graph.Graph) {
	if g == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version++
	gv, infos := viewGraph(g, c.opts.Secrets, c.version)
	c.graph, _ = json.Marshal(gv)
	c.nodes = infos
	for a := range c.hist {
		if infos[a] == nil {
			delete(c.hist, a)
		}
	}
}

// Run samples every Interval until ctx ends, and returns nil then.
func (c *Console) Run(ctx context.Context) error {
	t := time.NewTicker(Interval)
	defer t.Stop()
	c.sample(time.Now())
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			c.sample(now)
		}
	}
}

// sample reads the running graph's state once, records it in every node's
// history and sends it to every open page. Its cost does not depend on how
// many pages are open: a frame is encoded once and shared.
func (c *Console) sample(now time.Time) {
	rt := c.opts.Runtime
	ready := rt.Readiness()
	gs := rt.GraphState()
	counts, gauges, err := gatherCounts(c.opts.Engine)
	if err != nil {
		c.opts.Logger.Debug("console: gather engine metrics", "err", err)
	}
	f := frame{Time: now.UTC(), Generation: rt.Generation(), Reloads: len(rt.Reloads()), Ready: ready.Ready,
		LastReload: ready.LastReload, Nodes: map[string]nodeFrame{}}
	if f.LastReload != nil {
		lr := *f.LastReload
		lr.Error = c.opts.Secrets.String(lr.Error)
		f.LastReload = &lr
	}
	for _, st := range ready.Nodes {
		f.Nodes[st.Address] = nodeFrame{State: st.State, Detail: c.opts.Secrets.String(st.Detail), Synced: st.Synced,
			Restarts: st.Restarts, Queue: gauges[st.Address].queue, Braked: gauges[st.Address].braked}
	}
	for _, ns := range gs.Nodes {
		if nf, ok := f.Nodes[ns.Address]; ok {
			nf.Records, nf.Pending = ns.Records, len(ns.Pending)
			f.Nodes[ns.Address] = nf
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	secs := now.Sub(c.prevAt).Seconds()
	for a, nf := range f.Nodes {
		cur, before := counts[a], c.prev[a]
		if !c.prevAt.IsZero() {
			nf.In, nf.Out = rate(cur.in, before.in, secs), rate(cur.out, before.out, secs)
			nf.Writes, nf.Errors = rate(cur.writes, before.writes, secs), rate(cur.errors, before.errors, secs)
		}
		f.Nodes[a] = nf
		if c.nodes[a] == nil {
			continue // a node of a graph the console was not handed yet
		}
		h := c.hist[a]
		if h == nil {
			h = &ring{}
			c.hist[a] = h
		}
		h.add(point{T: now.Unix(), Records: nf.Records, In: nf.In, Out: nf.Out, Queue: nf.Queue})
	}
	c.prev, c.prevAt = counts, now
	f.Graph = c.version
	b, _ := json.Marshal(f)
	c.last = append(append([]byte("event: state\ndata: "), b...), "\n\n"...)
	for ch := range c.subs {
		select {
		case ch <- c.last:
		default: // the page is behind: it gets the next frame instead
		}
	}
}

// Handler serves the page and its read-only endpoints:
//
//	GET /                      the page
//	GET /console/assets/...    its script and style
//	GET /console/graph         the laid-out graph (graphView)
//	GET /console/node?addr=A   one node's block, fields and history
//	GET /console/events        server-sent events: a "state" frame per Interval
func (c *Console) Handler() http.Handler {
	mux := http.NewServeMux()
	sub, _ := fs.Sub(assets, "assets")
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		secure(w)
		http.ServeFileFS(w, r, sub, "index.html")
	})
	mux.Handle("GET /console/assets/", http.StripPrefix("/console/assets/", http.FileServerFS(sub)))
	mux.HandleFunc("GET /console/graph", func(w http.ResponseWriter, _ *http.Request) {
		c.mu.Lock()
		b := c.graph
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(b)
	})
	mux.HandleFunc("GET /console/node", c.serveNode)
	mux.HandleFunc("GET /console/events", c.serveEvents)
	return mux
}

// secure sets the headers of the page: nothing may load from elsewhere.
func secure(w http.ResponseWriter) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
}

// nodeDetail is the JSON of GET /console/node.
type nodeDetail struct {
	nodeView
	Inputs  []string    `json:"inputs"`
	Block   string      `json:"block"`
	History historyView `json:"history"`
}

func (c *Console) serveNode(w http.ResponseWriter, r *http.Request) {
	addr := r.URL.Query().Get("addr")
	c.mu.Lock()
	info := c.nodes[addr]
	var d nodeDetail
	if info != nil {
		d = nodeDetail{nodeView: info.view, Inputs: info.inputs, Block: info.block}
		if h := c.hist[addr]; h != nil {
			d.History = h.series()
		} else {
			d.History = (&ring{}).series()
		}
	}
	c.mu.Unlock()
	if info == nil {
		http.Error(w, "no node "+c.opts.Secrets.String(addr)+" in the running graph", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(d)
}

// serveEvents streams frames to one page until it goes away. At most
// MaxPages follow at once; a page that cannot keep up skips frames rather
// than queueing them, so a page costs one goroutine and one small channel.
func (c *Console) serveEvents(w http.ResponseWriter, r *http.Request) {
	select {
	case c.slots <- struct{}{}:
		defer func() { <-c.slots }()
	default:
		w.Header().Set("Retry-After", "5")
		http.Error(w, "too many console pages are open", http.StatusServiceUnavailable)
		return
	}
	ch := make(chan []byte, 1)
	c.mu.Lock()
	c.subs[ch] = struct{}{}
	first := c.last
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.subs, ch)
		c.mu.Unlock()
	}()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	send := func(msg []byte) bool {
		// A stream outlives the server's WriteTimeout; each write gets its own.
		_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := w.Write(msg); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send([]byte("retry: 2000\n\n")) || first != nil && !send(first) {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case msg := <-ch:
			if !send(msg) {
				return
			}
		}
	}
}
