// Package backendtest runs what a proxy in front of Kubernetes endpoints
// needs around it in tests, benchmarks and the demo: HTTP backends that
// answer with their own name on ports of a host address EndpointSlices
// accept, and a stop for a process named by a pid file (HAProxy's master).
package backendtest

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// HostIPv4 returns an IPv4 address of this host outside loopback and
// link-local: EndpointSlices refuse loopback addresses.
func HostIPv4() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String(), nil
		}
	}
	return "", errors.New("no IPv4 address outside loopback for the EndpointSlices")
}

// Serve serves each name on a port of its own on ip, answering every
// request with the name. ports[i] is names[i]'s port; stop closes them all.
func Serve(ip string, names ...string) (ports []int, stop func(), err error) {
	var srvs []*http.Server
	stop = func() {
		for _, s := range srvs {
			_ = s.Close()
		}
	}
	for _, name := range names {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			stop()
			return nil, nil, err
		}
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
		s := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, name) })}
		srvs = append(srvs, s)
		go func() { _ = s.Serve(l) }()
	}
	return ports, stop, nil
}

// StopPidFile sends SIGTERM to the process whose id is the first line of
// the file at path; a missing or unreadable file is nothing to stop.
func StopPidFile(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	line, _, _ := strings.Cut(string(b), "\n")
	if n, err := strconv.Atoi(strings.TrimSpace(line)); err == nil && n > 0 {
		_ = syscall.Kill(n, syscall.SIGTERM)
	}
}
