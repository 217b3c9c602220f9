package natstest

import (
	"strconv"
	"strings"
	"testing"
)

// Cluster starts n nats-server processes on 127.0.0.1 that form one
// JetStream cluster (routes to each other, server names n1..nN). Each can be
// stopped and restarted on its own; the test's cleanup stops them all. The
// cluster elects its JetStream meta leader a moment after the processes
// listen: a client's first JetStream call may need a retry.
func Cluster(t testing.TB, n int) []*Server {
	t.Helper()
	bin := Binary(t)
	routePorts := make([]int, n)
	routes := make([]string, n)
	for i := range n {
		routePorts[i] = FreePort(t)
		routes[i] = "nats://127.0.0.1:" + strconv.Itoa(routePorts[i])
	}
	out := make([]*Server, n)
	for i := range n {
		name := "n" + strconv.Itoa(i+1)
		mon := FreePort(t)
		s := &Server{t: t, Port: FreePort(t), Store: t.TempDir(), bin: bin, Name: name, Monitor: mon,
			extra: []string{"-n", name, "--cluster_name", "pipeline-test", "-m", strconv.Itoa(mon),
				"--cluster", routes[i], "--routes", strings.Join(routes, ",")}}
		s.start()
		t.Cleanup(s.Stop)
		out[i] = s
	}
	return out
}

// URLs are the client URLs of servers, comma-separated as nats.go and the
// url attribute take them.
func URLs(servers []*Server) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.URL()
	}
	return out
}
