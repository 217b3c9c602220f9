package nats

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/fastexpr"
	"github.com/pipeline/pipeline/internal/natsconn"
	"github.com/pipeline/pipeline/schema"
)

// Target publishes. Prepare may be called from the engine's goroutine only,
// like every Target method.
type Target struct {
	s           *Sink
	env         node.Env
	conn        *natsconn.Conn
	plan        bool
	generation  atomic.Uint64
	unconfirmed prometheus.Counter
	// pending holds the id and generation of each message not yet
	// confirmed, by op and key: a retry of the same message (same Data)
	// reuses its Nats-Msg-Id so JetStream drops the copy, while a new
	// version of the key, even one equal to an older version, gets a new id.
	pending map[string]pendingMsg
	subject *fastexpr.Expr // s.subject with its fast path
}

type pendingMsg struct {
	data []byte
	id   string
	gen  uint64
}

// Open implements node.Sink. In ModePlan nothing is connected: the sink has
// no state to read.
func (s *Sink) Open(_ context.Context, env node.Env, mode node.Mode) (node.Target, error) {
	t := &Target{s: s, env: env, plan: mode == node.ModePlan, pending: map[string]pendingMsg{}, subject: fastexpr.Compile(s.subject, s.ctx)}
	if t.plan {
		return t, nil
	}
	t.unconfirmed = prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_sink_nats_unconfirmed_total",
		Help: "Messages whose receipt the server did not confirm in ack_timeout (no ack, or no flush for core NATS); each is retried."})
	if err := env.Metrics.Register(t.unconfirmed); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	conn, err := natsconn.Dial(s.conn, natsconn.Options{Name: s.address, Logger: env.Logger, Metrics: env.Metrics, Report: reportTo(env.Health)})
	if err != nil {
		env.Metrics.Unregister(t.unconfirmed)
		return nil, err
	}
	t.conn = conn
	return t, nil
}

// Ready implements node.Readier: the connection is up.
func (t *Target) Ready(ctx context.Context) error {
	if t.plan {
		return nil
	}
	return t.conn.WaitConnected(ctx)
}

func reportTo(h node.Health) func(natsconn.Status, string) {
	return func(s natsconn.Status, detail string) {
		switch s {
		case natsconn.Connected:
			h.Set(node.Healthy, detail)
		case natsconn.Closed:
			h.Set(node.Down, detail)
		default:
			h.Set(node.Degraded, detail)
		}
	}
}

// Prepare implements node.Target: it evaluates the subject and encodes the
// value. The entry's Data is the subject, a NUL and the value's JSON, so an
// unchanged record is not published again.
func (t *Target) Prepare(r node.Record) (node.Entry, error) {
	ctx := t.s.ctx.NewChild()
	ctx.Variables = map[string]cty.Value{"record": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(r.Key), "value": r.Value})}
	v, diags := t.subject.Value(ctx)
	if diags.HasErrors() {
		return node.Entry{}, fmt.Errorf("subject: %s", diags.Error())
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return node.Entry{}, fmt.Errorf("subject is %s, not a string", v.Type().FriendlyName())
	}
	// The server needs the raw subject; a sensitive one is not shown.
	sensitive := v.IsMarked()
	v, _ = v.Unmark()
	subject := v.AsString()
	if !validSubject(subject) {
		if sensitive {
			return node.Entry{}, errors.New("invalid subject (sensitive, not shown): tokens separated by dots, no spaces or wildcards")
		}
		return node.Entry{}, fmt.Errorf("invalid subject %q: tokens separated by dots, no spaces or wildcards", subject)
	}
	value, marked, err := natsconn.EncodeValue(r.Value)
	if err != nil {
		return node.Entry{}, err
	}
	data := make([]byte, 0, len(subject)+1+len(value))
	data = append(append(append(data, subject...), 0), value...)
	shown := cty.StringVal(string(value))
	if marked || sensitive {
		// Views mask what is published, and Show, which prints the
		// subject, is not asked about a masked entry.
		shown = schema.MarkSensitive(shown)
	}
	return node.Entry{Key: r.Key, Value: shown, Data: data}, nil
}

func validSubject(s string) bool {
	if s == "" || strings.ContainsAny(s, " \t\r\n*>\x00") {
		return false
	}
	for _, tok := range strings.Split(s, ".") {
		if tok == "" {
			return false
		}
	}
	return true
}

// Actual implements node.Target: published messages cannot be read back.
func (t *Target) Actual(context.Context) ([]node.Entry, error) { return nil, node.ErrNoActualState }

// Update implements node.Target: one upsert message per entry.
func (t *Target) Update(ctx context.Context, batch []node.Entry) { t.publish(ctx, "upsert", batch) }

// Delete implements node.Target: one delete message per entry, to the
// subject of the key's last upsert.
func (t *Target) Delete(ctx context.Context, batch []node.Entry) { t.publish(ctx, "delete", batch) }

// body is the JSON of one message.
type body struct {
	Op         string          `json:"op"`
	Key        string          `json:"key"`
	Value      json.RawMessage `json:"value,omitempty"`
	Source     string          `json:"source,omitempty"`
	Generation uint64          `json:"generation"`
	Time       string          `json:"time"`
}

// encode builds the message of one entry, reusing the id of the same
// message when it is a retry.
func (t *Target) encode(op string, e node.Entry) (*nats.Msg, error) {
	subject, value, ok := bytes.Cut(e.Data, []byte{0})
	if !ok {
		return nil, errors.New("entry was not prepared by this sink")
	}
	pk := op + "\x00" + e.Key
	p, retry := t.pending[pk]
	if !retry || !bytes.Equal(p.data, e.Data) {
		p = pendingMsg{data: e.Data, id: nuid.Next(), gen: t.generation.Add(1)}
		t.pending[pk] = p
	}
	b := body{Op: op, Key: e.Key, Source: t.s.source, Generation: p.gen, Time: time.Now().UTC().Format(time.RFC3339Nano)}
	if op == "upsert" {
		b.Value = value
	}
	data, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("encode message: %w", err)
	}
	msg := nats.NewMsg(string(subject))
	msg.Data = data
	msg.Header.Set("Pipeline-Op", op)
	msg.Header.Set("Pipeline-Key", e.Key)
	msg.Header.Set(jetstream.MsgIDHeader, p.id)
	return msg, nil
}

func (t *Target) publish(ctx context.Context, op string, batch []node.Entry) {
	if t.plan {
		failAll(batch, errors.New("target opened for plan: publishing refused"))
		return
	}
	msgs := make([]*nats.Msg, len(batch))
	for i := range batch {
		msgs[i], batch[i].Err = t.encode(op, batch[i])
	}
	if t.s.jetstream {
		t.publishJS(ctx, batch, msgs)
	} else {
		t.publishCore(batch, msgs)
	}
	for i := range batch {
		if batch[i].Err == nil {
			delete(t.pending, op+"\x00"+batch[i].Key)
		}
	}
}

// publishCore publishes and flushes once: a failed flush fails the batch
// (the engine retries it, so a subscriber may see a message twice).
func (t *Target) publishCore(batch []node.Entry, msgs []*nats.Msg) {
	nc := t.conn.NC()
	sent := 0
	for i, m := range msgs {
		if m == nil {
			continue
		}
		if err := nc.PublishMsg(m); err != nil {
			batch[i].Err = fmt.Errorf("publish %s: %w", m.Subject, err)
			continue
		}
		sent++
	}
	if sent == 0 {
		return
	}
	if err := nc.FlushTimeout(t.s.ackTimeout); err != nil {
		t.unconfirmed.Add(float64(sent))
		for i, m := range msgs {
			if m != nil && batch[i].Err == nil {
				batch[i].Err = fmt.Errorf("publish %s: not confirmed by the server: %w", m.Subject, err)
			}
		}
	}
}

// publishJS publishes asynchronously, at most max_in_flight at a time, and
// waits for every acknowledgement (bounded by ack_timeout per window).
func (t *Target) publishJS(ctx context.Context, batch []node.Entry, msgs []*nats.Msg) {
	js := t.conn.JetStream()
	for start := 0; start < len(msgs); start += t.s.inFlight {
		end := min(start+t.s.inFlight, len(msgs))
		futures := make([]jetstream.PubAckFuture, end-start)
		for i := start; i < end; i++ {
			if msgs[i] == nil {
				continue
			}
			f, err := js.PublishMsgAsync(msgs[i])
			if err != nil {
				batch[i].Err = fmt.Errorf("publish %s: %w", msgs[i].Subject, err)
				continue
			}
			futures[i-start] = f
		}
		wctx, cancel := context.WithTimeout(ctx, t.s.ackTimeout)
		for j, f := range futures {
			if f == nil {
				continue
			}
			i := start + j
			select {
			case ack := <-f.Ok():
				if ack.Duplicate {
					t.env.Logger.Debug("duplicate dropped by the stream", "key", batch[i].Key)
				}
			case err := <-f.Err():
				batch[i].Err = fmt.Errorf("publish %s: %w", msgs[i].Subject, err)
			case <-wctx.Done():
				t.unconfirmed.Inc()
				batch[i].Err = fmt.Errorf("publish %s: no acknowledgement in %s", msgs[i].Subject, t.s.ackTimeout)
			}
		}
		cancel()
	}
}

func failAll(batch []node.Entry, err error) {
	for i := range batch {
		batch[i].Err = err
	}
}

// Close implements node.Target: it flushes and closes the connection.
func (t *Target) Close() error {
	if t.plan {
		return nil
	}
	t.conn.Close()
	t.env.Metrics.Unregister(t.unconfirmed)
	return nil
}

var (
	_ node.Sink    = (*Sink)(nil)
	_ node.Target  = (*Target)(nil)
	_ node.Readier = (*Target)(nil)
)
