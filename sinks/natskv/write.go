package natskv

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pipeline/pipeline/engine/node"
)

// Update implements node.Target. It publishes every value asynchronously to
// the key's subject (what Put does, without waiting for each ack in turn),
// then waits for the acknowledgements up to write_timeout. A write whose ack
// did not come has an unknown outcome (it may sit in the reconnect buffer
// and land later): the key is read back and reported failed only when the
// bucket does not hold the value. At most inFlight writes await an ack.
func (t *Target) Update(ctx context.Context, batch []node.Entry) {
	kv, err := t.writable(ctx)
	if err != nil {
		failAll(batch, err)
		return
	}
	for start := 0; start < len(batch); start += inFlight {
		t.put(ctx, kv, batch[start:min(start+inFlight, len(batch))])
	}
}

// inFlight bounds the publishes awaiting an ack at once (the client stalls
// beyond 4000).
const inFlight = 1024

func (t *Target) put(ctx context.Context, kv jetstream.KeyValue, batch []node.Entry) {
	js := t.conn.JetStream()
	futures := make([]jetstream.PubAckFuture, len(batch))
	for i := range batch {
		raw := batch[i].Data
		futures[i], batch[i].Err = js.PublishAsync(t.subject(batch[i].Key), raw)
	}
	ctx, cancel := context.WithTimeout(ctx, t.s.timeout)
	defer cancel()
	for i, f := range futures {
		if f == nil {
			continue
		}
		select {
		case <-f.Ok():
		case err := <-f.Err():
			batch[i].Err = t.writeErr(batch[i].Key, err)
		case <-ctx.Done():
			batch[i].Err = t.readBack(kv, batch[i])
		}
	}
}

// readBack settles a write of unknown outcome by reading the key.
func (t *Target) readBack(kv jetstream.KeyValue, e node.Entry) error {
	t.unknown.Inc()
	ctx, cancel := context.WithTimeout(context.Background(), t.s.conn.ConnectTimeout)
	defer cancel()
	got, err := kv.Get(ctx, e.Key)
	raw := e.Data
	if err == nil && string(got.Value()) == string(raw) {
		return nil
	}
	return fmt.Errorf("put %s: no acknowledgement in %s and the bucket does not hold the value", e.Key, t.s.timeout)
}

func (t *Target) writeErr(key string, err error) error {
	if isFull(err) {
		t.full.Inc()
		return fmt.Errorf("put %s: bucket %s is full (max_bytes): %w", key, t.s.bucket, err)
	}
	return fmt.Errorf("put %s: %w", key, err)
}

func isFull(err error) bool {
	return errors.Is(err, jetstream.ErrMaxBytesExceeded) || strings.Contains(err.Error(), "maximum bytes exceeded") ||
		strings.Contains(err.Error(), "insufficient resources")
}

// Delete implements node.Target. A delete writes a delete marker, so
// watchers see it; deleting a missing key succeeds.
func (t *Target) Delete(ctx context.Context, batch []node.Entry) {
	kv, err := t.writable(ctx)
	if err != nil {
		failAll(batch, err)
		return
	}
	for i := range batch {
		cctx, cancel := context.WithTimeout(ctx, t.s.timeout)
		if err := kv.Delete(cctx, batch[i].Key); err != nil {
			batch[i].Err = fmt.Errorf("delete %s: %w", batch[i].Key, err)
		}
		cancel()
	}
}

func (t *Target) writable(ctx context.Context) (jetstream.KeyValue, error) {
	if t.plan {
		return nil, errors.New("target opened for plan: writes refused")
	}
	kv, err := t.bucket(ctx)
	if err == nil && kv == nil {
		err = fmt.Errorf("bucket %s does not exist and create = false", t.s.bucket)
	}
	return kv, err
}

func (t *Target) subject(key string) string { return "$KV." + t.s.bucket + "." + key }

func failAll(batch []node.Entry, err error) {
	for i := range batch {
		batch[i].Err = err
	}
}

// Close implements node.Target: it closes the connection (and releases the
// embedded server). The bucket keeps its keys.
func (t *Target) Close() error {
	if t.conn == nil {
		return nil // plan of an embedded server that does not run
	}
	t.conn.Close()
	t.unregister()
	return nil
}

func (t *Target) unregister() {
	if !t.plan {
		t.env.Metrics.Unregister(t.full)
		t.env.Metrics.Unregister(t.unknown)
	}
}
