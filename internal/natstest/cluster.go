package natstest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
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

// ClientNames lists the names of the clients connected to the server, from
// its monitoring endpoint (a pipeline node's client is named by its address).
func (s *Server) ClientNames() ([]string, error) {
	if s.Monitor == 0 {
		return nil, errors.New("server has no monitoring port")
	}
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://127.0.0.1:" + strconv.Itoa(s.Monitor) + "/connz")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var connz struct {
		Connections []struct {
			Name string `json:"name"`
		} `json:"connections"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&connz); err != nil {
		return nil, fmt.Errorf("decode connz: %w", err)
	}
	var out []string
	for _, c := range connz.Connections {
		out = append(out, c.Name)
	}
	return out, nil
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
