package natskv

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/natstest"
)

const benchKeys = 10000

func benchRecords() []node.Record {
	recs := make([]node.Record, benchKeys)
	for i := range recs {
		recs[i] = node.Record{Key: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255),
			Value: cty.ObjectVal(map[string]cty.Value{"pod": cty.StringVal(fmt.Sprintf("backend-%d", i)), "namespace": cty.StringVal("shop")})}
	}
	return recs
}

// BenchmarkMirror10k is P7: the nats_kv target writing 10,000 keys into a
// fresh file-backed bucket (Prepare + Update in batches of 1024, as the
// engine's sink loop calls it), against BenchmarkRawAsyncPuts10k below,
// the floor: the same keys and values as raw async KV publishes.
func BenchmarkMirror10k(b *testing.B) {
	srv := natstest.Embedded(b)
	recs := benchRecords()
	for i := 0; b.Loop(); i++ {
		body := fmt.Sprintf("input = transform.extract.ips\nurl = %q\nbucket = \"m%d\"\nkey_prefix = \"v1.\"", srv.URL(), i)
		s := nodetest.MustBuild(b, Spec(), body, &node.Upstream{Type: node.Records}).Sink.(*Sink)
		env, _ := nodetest.Env(b, nil)
		tg, err := s.Open(context.Background(), env, node.ModeRun)
		if err != nil {
			b.Fatal(err)
		}
		for start := 0; start < len(recs); start += 1024 {
			batch := make([]node.Entry, 0, 1024)
			for _, r := range recs[start:min(start+1024, len(recs))] {
				e, err := tg.Prepare(r)
				if err != nil {
					b.Fatal(err)
				}
				batch = append(batch, e)
			}
			tg.Update(context.Background(), batch)
			for _, e := range batch {
				if e.Err != nil {
					b.Fatal(e.Err)
				}
			}
		}
		tg.Close()
	}
}

func BenchmarkRawAsyncPuts10k(b *testing.B) {
	srv := natstest.Embedded(b)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(benchKeys))
	keys := make([]string, benchKeys)
	vals := make([][]byte, benchKeys)
	for i, r := range benchRecords() {
		keys[i] = "v1." + r.Key
		vals[i] = []byte(fmt.Sprintf(`{"namespace":"shop","pod":"backend-%d"}`, i))
	}
	for i := 0; b.Loop(); i++ {
		bucket := fmt.Sprintf("r%d", i)
		if _, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: bucket, Storage: jetstream.FileStorage}); err != nil {
			b.Fatal(err)
		}
		for j := range keys {
			if _, err := js.PublishAsync("$KV."+bucket+"."+keys[j], vals[j]); err != nil {
				b.Fatal(err)
			}
		}
		<-js.PublishAsyncComplete()
	}
}
