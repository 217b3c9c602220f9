//go:build integration

package natskv

import (
	"testing"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/natstest"
)

// The same restart checks against a nats-server process built from its Go
// module, killed with SIGKILL and started again on the same store.
func TestRestartExternal(t *testing.T) { restartConverges(t, natstest.External(t)) }

func TestTargetSuiteExternal(t *testing.T) {
	srv := natstest.External(t)
	nodetest.RunTargetSuite(t, func(t *testing.T) node.Target {
		tg, _ := open(t, srv, "")
		return tg
	}, records())
}
