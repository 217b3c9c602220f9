//go:build integration

package nats

import (
	"testing"

	"github.com/pipeline/pipeline/internal/natstest"
)

// The same restart checks against a nats-server process built from its Go
// module, killed with SIGKILL and started again on the same store.
func TestRestartExternal(t *testing.T) { restartWhilePublishing(t, natstest.External(t)) }
