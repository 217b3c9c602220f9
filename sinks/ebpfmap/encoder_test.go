package ebpfmap

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// TestEncoderPreparesAsTheTarget: the Encoder's entries are byte for byte
// those of a target opened for plan, and it touches no pin.
func TestEncoderPreparesAsTheTarget(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "absent")
	s := nodetest.MustBuild(t, Spec(), "input = transform.extract.ips\n"+`
pin         = "`+filepath.Join(dir, "m")+`"
type        = "lpm_trie"
max_entries = 16
key {
  type = "ipv4_prefix"
}
value {
  type = "u32"
  from = record.value.id
}`, records).Sink.(*Sink)
	env, _ := nodetest.Env(t, nil)
	enc, err := s.Encoder(env)
	if err != nil {
		t.Fatal(err)
	}
	planned, err := s.Open(context.Background(), env, node.ModePlan)
	if err != nil {
		t.Fatal(err)
	}
	defer planned.Close()
	rec := node.Record{Key: "10.1.0.0/16", Value: cty.ObjectVal(map[string]cty.Value{"id": cty.NumberIntVal(7)})}
	got, err := enc(rec)
	if err != nil {
		t.Fatal(err)
	}
	want, err := planned.Prepare(rec)
	if err != nil {
		t.Fatal(err)
	}
	if got.Key != want.Key || string(got.Data) != string(want.Data) || !got.Value.RawEquals(want.Value) {
		t.Errorf("encoder %+v, target %+v", got, want)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the encoder touched the pin's directory: %v", err)
	}
}
