package contenders

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksOnlyClientLibraries checks that each contender program links
// what a hand-written one would (client-go, apimachinery, cilium/ebpf and
// their dependencies) and none of the pipeline's packages or heavy
// dependencies, whose start-up it would otherwise pay.
func TestLinksOnlyClientLibraries(t *testing.T) {
	banned := []string{"github.com/pipeline/pipeline/engine", "github.com/pipeline/pipeline/schema",
		"github.com/pipeline/pipeline/sources", "github.com/pipeline/pipeline/sinks", "github.com/pipeline/pipeline/internal",
		"github.com/hashicorp/hcl", "github.com/zclconf/go-cty", "github.com/nats-io", "github.com/prometheus"}
	for _, prog := range []string{"floor", "controller", "planfloor"} {
		out, err := exec.Command("go", "list", "-deps", "./"+prog).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", prog, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, b := range banned {
				if strings.HasPrefix(dep, b) {
					t.Errorf("%s links %s", prog, dep)
				}
			}
		}
	}
}
