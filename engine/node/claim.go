package node

import "github.com/hashicorp/hcl/v2"

// Claim is an exclusive resource a node writes (a map pin, a file). Two
// nodes that claim the same one would undo each other's writes, so the
// engine refuses the configuration. A node declares its claims with a
// method `Claims() []Claim`.
type Claim struct {
	What  string    // "pin", "log file": names the resource in the diagnostic
	Name  string    // the resource, cleaned (an absolute path)
	Range hcl.Range // the attribute that names it
}
