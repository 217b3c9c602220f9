package haproxy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// An Action is what an Op does to one server.
type Action int

const (
	// SetAddr moves a server to another address and port.
	SetAddr Action = iota + 1
	// SetWeight changes a server's weight.
	SetWeight
	// SetState puts a server in maintenance or takes it out.
	SetState
	// AddServer adds a server to a backend, then enables it unless the
	// file says disabled.
	AddServer
	// DelServer puts a server in maintenance, then deletes it; when it
	// still has connections it stays in maintenance until the next reload.
	DelServer
)

var actionNames = [...]string{SetAddr: "set addr", SetWeight: "set weight", SetState: "set state", AddServer: "add server", DelServer: "del server"}

func (a Action) String() string {
	if a > 0 && int(a) < len(actionNames) {
		return actionNames[a]
	}
	return "action(" + strconv.Itoa(int(a)) + ")"
}

// An Op is one runtime change of one server.
type Op struct {
	Action   Action
	Backend  string
	Server   string
	Addr     netip.AddrPort // SetAddr, AddServer
	Weight   int            // SetWeight, AddServer
	Disabled bool           // SetState, AddServer: maintenance
	// Options are the server's options given to `add server` (AddServer).
	Options []string
}

// String is the op in one line for plan, explain and logs.
func (o Op) String() string {
	id := o.Backend + "/" + o.Server
	switch o.Action {
	case SetAddr:
		return fmt.Sprintf("%s addr %s", id, o.Addr)
	case SetWeight:
		return fmt.Sprintf("%s weight %d", id, o.Weight)
	case SetState:
		return fmt.Sprintf("%s state %s", id, state(o.Disabled))
	case AddServer:
		return strings.TrimSpace(fmt.Sprintf("add %s %s %s", id, o.Addr, strings.Join(o.Options, " ")))
	case DelServer:
		return "del " + id
	}
	return o.Action.String() + " " + id
}

func state(disabled bool) string {
	if disabled {
		return "maint"
	}
	return "ready"
}

// command is one runtime API command and the answers that mean success.
type command struct {
	text string
	ok   func(answer string) bool
	// kept is an answer that is not success but leaves a state Verify
	// accepts (a deleted server that still has connections stays in
	// maintenance).
	kept string
}

func empty(a string) bool { return a == "" }

func prefixed(prefixes ...string) func(string) bool {
	return func(a string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(a, p) {
				return true
			}
		}
		return false
	}
}

// commands returns the runtime API commands of o, in order.
func (o Op) commands() []command {
	id := o.Backend + "/" + o.Server
	switch o.Action {
	case SetAddr:
		return []command{{text: fmt.Sprintf("set server %s addr %s port %d", id, o.Addr.Addr(), o.Addr.Port()),
			ok: prefixed("IP changed from", "no need to change the addr")}}
	case SetWeight:
		return []command{{text: fmt.Sprintf("set server %s weight %d", id, o.Weight), ok: empty}}
	case SetState:
		return []command{{text: fmt.Sprintf("set server %s state %s", id, state(o.Disabled)), ok: empty}}
	case AddServer:
		cs := []command{{text: strings.TrimSpace(fmt.Sprintf("add server %s %s %s", id, o.Addr, strings.Join(o.Options, " "))),
			ok: prefixed("New server registered.")}}
		for _, opt := range o.Options {
			if opt == "check" {
				cs = append(cs, command{text: "enable health " + id, ok: empty})
			}
		}
		if !o.Disabled {
			cs = append(cs, command{text: "enable server " + id, ok: empty})
		}
		return cs
	case DelServer:
		return []command{{text: fmt.Sprintf("set server %s state maint", id), ok: empty},
			{text: "del server " + id, ok: prefixed("Server deleted."), kept: "Server still has connections attached to it"}}
	}
	return nil
}
