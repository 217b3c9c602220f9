package template

import (
	"testing"

	"go.uber.org/goleak"
)

// Every target's retry loop and every command's goroutines end with Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
