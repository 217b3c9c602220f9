package natsconn

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// servers holds the embedded servers of this process by listen address, so
// that several nodes declaring the same embedded block share one server
// (and a reload that rebuilds a node does not restart it while another node
// holds it). The last release shuts the server down.
var servers = struct {
	sync.Mutex
	m map[string]*sharedServer
}{m: map[string]*sharedServer{}}

type sharedServer struct {
	ns    *server.Server
	store string
	refs  int
}

// acquire starts the embedded server e, or returns the running one.
func acquire(e *Embedded) (*server.Server, error) {
	servers.Lock()
	defer servers.Unlock()
	if s, ok := servers.m[e.Listen]; ok {
		if s.store != e.StoreDir {
			return nil, fmt.Errorf("embedded nats-server on %s already runs with store_dir %s, not %s", e.Listen, s.store, e.StoreDir)
		}
		s.refs++
		return s.ns, nil
	}
	host, portText, err := net.SplitHostPort(e.Listen)
	if err != nil {
		return nil, fmt.Errorf("embedded nats-server: listen %q: %w", e.Listen, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, fmt.Errorf("embedded nats-server: listen %q: %w", e.Listen, err)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	ns, err := server.NewServer(&server.Options{
		Host: host, Port: port, ServerName: e.ServerName,
		JetStream: true, StoreDir: e.StoreDir,
		// One consumer per agent: the server's default caps a stream at
		// 1,000, which a hub with 1,000 agents reaches.
		JetStreamLimits: server.JSLimitOpts{DefaultMaxConsumers: -1},
		NoLog:           true, NoSigs: true,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded nats-server: %w", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("embedded nats-server on %s: not ready after 10s (is the port in use?)", e.Listen)
	}
	servers.m[e.Listen] = &sharedServer{ns: ns, store: e.StoreDir, refs: 1}
	return ns, nil
}

// release drops one reference to the embedded server on listen.
func release(listen string) {
	servers.Lock()
	s, ok := servers.m[listen]
	if ok {
		s.refs--
		if s.refs > 0 {
			ok = false
		} else {
			delete(servers.m, listen)
		}
	}
	servers.Unlock()
	if ok {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
	}
}
