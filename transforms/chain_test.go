package transforms_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/ctyconv"
	"github.com/pipeline/pipeline/transforms/debounce"
	"github.com/pipeline/pipeline/transforms/extract"
	"github.com/pipeline/pipeline/transforms/filter"
	"github.com/pipeline/pipeline/transforms/graceperiod"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	debounceStage = stage{debounce.Spec(), "interval = \"100ms\"\nmax_wait = \"500ms\""}
	graceStage    = stage{graceperiod.Spec(), `delay = "2s"`}
	extractStage  = stage{extract.Spec(), "key = object.ip\nvalue = { owner = object.name, keep = object.keep, v = object.v }"}
	filterStage   = stage{filter.Spec(), "where = record.value.keep"}
)

// object is the value of input object name.
func object(name, ip string, keep bool, v int) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(name), "ip": cty.StringVal(ip),
		"keep": cty.BoolVal(keep), "v": cty.NumberIntVal(int64(v))})
}

// identity is what a chain of timing transforms converges to.
func identity(in map[node.Key]cty.Value) map[node.Key]string {
	out := map[node.Key]string{}
	for k, v := range in {
		out[k] = ctyconv.String(v)
	}
	return out
}

// byIP is what extractStage then filterStage converge to: one record per
// IP, from the object with the smallest key yielding it, kept when keep.
func byIP(in map[node.Key]cty.Value) map[node.Key]string {
	owner := map[string]node.Key{}
	for k, v := range in {
		ip := v.GetAttr("ip").AsString()
		if o, ok := owner[ip]; !ok || k < o {
			owner[ip] = k
		}
	}
	out := map[node.Key]string{}
	for ip, k := range owner {
		v := in[k]
		if v.GetAttr("keep").True() {
			out[ip] = ctyconv.String(cty.ObjectVal(map[string]cty.Value{"owner": v.GetAttr("name"), "keep": v.GetAttr("keep"), "v": v.GetAttr("v")}))
		}
	}
	return out
}

// TestChainModel drives chains of transforms with random changes, resets
// and pauses; once the input is quiet and time has passed beyond every
// delay, each chain's output must equal what its input state implies.
func TestChainModel(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stages []stage
		want   func(map[node.Key]cty.Value) map[node.Key]string
	}{
		{"debounce", []stage{debounceStage}, identity},
		{"grace_period", []stage{graceStage}, identity},
		{"debounce then grace_period", []stage{debounceStage, graceStage}, identity},
		{"grace_period then debounce", []stage{graceStage, debounceStage}, identity},
		{"extract filter debounce grace_period", []stage{extractStage, filterStage, debounceStage, graceStage}, byIP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range 10 {
				synctest.Test(t, func(t *testing.T) {
					out := nodetest.NewOutput()
					src := chain(t, out, tc.stages...)
					state := drive(src, rand.New(rand.NewPCG(uint64(seed), 42)))
					time.Sleep(5 * time.Second)
					synctest.Wait()
					if !out.Synced() {
						t.Error("output never synced")
					}
					if d := cmp.Diff(tc.want(state), identity(out.State())); d != "" {
						t.Fatalf("seed %d (-want +got):\n%s", seed, d)
					}
				})
			}
		})
	}
}

// drive plays a random history into src, acting as a source, and returns
// the final state.
func drive(src *pipe, rng *rand.Rand) map[node.Key]cty.Value {
	state := map[node.Key]cty.Value{}
	src.Replace(nil)
	for step := range 300 {
		if step == 20 {
			src.MarkSynced()
		}
		if rng.IntN(25) == 0 { // the source fell behind and resynchronises
			resync(src, state)
			continue
		}
		var batch []node.Delta
		for range 1 + rng.IntN(3) {
			k := fmt.Sprint("shop/p", rng.IntN(10))
			if rng.IntN(3) == 0 {
				delete(state, k)
				batch = append(batch, node.Remove(k, time.Now()))
				continue
			}
			v := object(k, fmt.Sprint("10.0.0.", rng.IntN(5)), rng.IntN(4) != 0, rng.IntN(3))
			state[k] = v
			batch = append(batch, node.Upsert(k, v, time.Now()))
		}
		src.Apply(batch)
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
	}
	if rng.IntN(2) == 0 {
		resync(src, state) // the last word is a reset
	}
	return state
}

func resync(src *pipe, state map[node.Key]cty.Value) {
	snap := make([]node.Record, 0, len(state))
	for k, v := range state {
		snap = append(snap, node.Record{Key: k, Value: v})
	}
	src.Replace(snap)
}
