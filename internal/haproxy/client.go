package haproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultTimeout bounds one command when Client.Timeout is zero.
const DefaultTimeout = 2 * time.Second

// maxAnswer bounds what one answer may hold: `show servers state` of
// tens of thousands of servers fits, a runaway peer does not.
const maxAnswer = 64 << 20

// Client talks to HAProxy's runtime API on a stats socket declared at
// level admin (`stats socket /run/haproxy.sock level admin`). Each
// command has a connection of its own, so that its answer is everything
// HAProxy writes before closing it.
type Client struct {
	Socket  string        // path of the unix socket
	Timeout time.Duration // bounds each command, within ctx; DefaultTimeout when 0
}

// An AnswerError is an answer of HAProxy that does not mean success.
type AnswerError struct {
	Command string
	Answer  string
}

func (e *AnswerError) Error() string {
	return fmt.Sprintf("haproxy answered %q to %q", firstLine(e.Answer), e.Command)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// Command sends one command and returns HAProxy's answer, trimmed. It
// returns when the answer is complete, ctx ends or the timeout passes,
// whichever comes first.
func (c Client) Command(ctx context.Context, cmd string) (string, error) {
	if strings.ContainsAny(cmd, "\n;") {
		return "", fmt.Errorf("runtime command %q: holds a separator", cmd)
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Socket)
	if err != nil {
		return "", fmt.Errorf("runtime command %q: %w", cmd, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := io.WriteString(conn, cmd+"\n"); err != nil {
		return "", fmt.Errorf("runtime command %q: %w", cmd, ctxErr(ctx, err))
	}
	b, err := io.ReadAll(io.LimitReader(conn, maxAnswer+1))
	if err != nil {
		return "", fmt.Errorf("runtime command %q: %w", cmd, ctxErr(ctx, err))
	}
	if len(b) > maxAnswer {
		return "", fmt.Errorf("runtime command %q: answer over %d bytes", cmd, maxAnswer)
	}
	return strings.TrimSpace(string(b)), nil
}

// ctxErr prefers the context's error to the deadline error it caused,
// which the connection may see first.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return err
}

// Apply sends the ops' commands in order and stops at the first answer
// that is not a success. A server removed while it still has connections
// stays in maintenance, which Verify accepts: it takes no new traffic,
// and the next reload drops it.
func (c Client) Apply(ctx context.Context, ops []Op) error {
	for _, o := range ops {
		for _, cmd := range o.commands() {
			a, err := c.Command(ctx, cmd.text)
			if err != nil {
				return err
			}
			if !cmd.ok(a) && (cmd.kept == "" || !strings.HasPrefix(a, cmd.kept)) {
				return &AnswerError{Command: cmd.text, Answer: a}
			}
		}
	}
	return nil
}

// A ServerState is one server as HAProxy holds it (`show servers state`).
type ServerState struct {
	Backend string
	Name    string
	Addr    netip.Addr
	Port    int
	Weight  int // the weight in effect (srv_uweight)
	Admin   int // srv_admin_state flags
}

// Admin state flags of `show servers state` (HAProxy's SRV_ADMF_*).
const (
	adminForcedMaint    = 0x01
	adminInheritedMaint = 0x02
	adminResolvedMaint  = 0x20
)

// Maint says whether the server is in maintenance, by the runtime API, by
// a tracked server or by DNS resolution.
func (s ServerState) Maint() bool {
	return s.Admin&(adminForcedMaint|adminInheritedMaint|adminResolvedMaint) != 0
}

// Servers reads every server of every backend.
func (c Client) Servers(ctx context.Context) ([]ServerState, error) {
	a, err := c.Command(ctx, "show servers state")
	if err != nil {
		return nil, err
	}
	return parseServersState(a)
}

// backendServers reads the servers of one backend.
func (c Client) backendServers(ctx context.Context, backend string) ([]ServerState, error) {
	cmd := "show servers state " + backend
	a, err := c.Command(ctx, cmd)
	if err != nil {
		return nil, err
	}
	held, err := parseServersState(a)
	var ae *AnswerError
	if errors.As(err, &ae) {
		ae.Command = cmd
	}
	return held, err
}

// parseServersState reads the answer of `show servers state` (format 1).
func parseServersState(a string) ([]ServerState, error) {
	lines := strings.Split(a, "\n")
	if strings.TrimSpace(lines[0]) != "1" {
		return nil, &AnswerError{Command: "show servers state", Answer: a}
	}
	var cols map[string]int
	var out []ServerState
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if f[0] == "#" {
			cols = map[string]int{}
			for i, name := range f[1:] {
				cols[name] = i
			}
			continue
		}
		s, err := serverState(cols, f)
		if err != nil {
			return nil, fmt.Errorf("show servers state: %w in %q", err, l)
		}
		out = append(out, s)
	}
	return out, nil
}

func serverState(cols map[string]int, f []string) (ServerState, error) {
	get := func(name string) (string, error) {
		i, ok := cols[name]
		if !ok || i >= len(f) {
			return "", fmt.Errorf("no column %s", name)
		}
		return f[i], nil
	}
	var s ServerState
	var err error
	var v [6]string
	for i, name := range []string{"be_name", "srv_name", "srv_addr", "srv_port", "srv_uweight", "srv_admin_state"} {
		if v[i], err = get(name); err != nil {
			return s, err
		}
	}
	s.Backend, s.Name = v[0], v[1]
	if s.Addr, err = netip.ParseAddr(v[2]); err != nil {
		return s, err
	}
	var errs [3]error
	s.Port, errs[0] = strconv.Atoi(v[3])
	s.Weight, errs[1] = strconv.Atoi(v[4])
	s.Admin, errs[2] = strconv.Atoi(v[5])
	return s, errors.Join(errs[:]...)
}

// Verify reads what HAProxy holds in the backends the ops touch and
// checks that every server they touched is as cfg (the new file) says:
// address, port, weight and maintenance, and that every removed server
// is gone or in maintenance.
func (c Client) Verify(ctx context.Context, cfg *Config, ops []Op) error {
	touched := map[string][]string{}
	for _, o := range ops {
		touched[o.Backend] = append(touched[o.Backend], o.Server)
	}
	var errs []error
	for _, b := range slices.Sorted(maps.Keys(touched)) {
		_, err := c.compare(ctx, cfg, b, touched[b])
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Check reads what HAProxy holds in the backends the ops touch and checks
// that it is what cfg (the file HAProxy is taken to run) says for every
// server of them, and that every other server is in maintenance: that
// the ops apply. It returns the ops deleting those other servers: servers
// removed earlier while they still had connections, kept in maintenance
// since.
func (c Client) Check(ctx context.Context, cfg *Config, ops []Op) ([]Op, error) {
	var leftover []Op
	var errs []error
	seen := map[string]bool{}
	for _, o := range ops {
		if seen[o.Backend] {
			continue
		}
		seen[o.Backend] = true
		left, err := c.compare(ctx, cfg, o.Backend, nil)
		leftover, errs = append(leftover, left...), append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return leftover, nil
}

// compare checks the servers names of backend against cfg, or every
// server HAProxy holds or cfg names when names is nil, and returns the
// ops deleting those HAProxy holds in maintenance that cfg does not name.
func (c Client) compare(ctx context.Context, cfg *Config, backend string, names []string) ([]Op, error) {
	sec := cfg.proxy(backend)
	if sec == nil {
		return nil, fmt.Errorf("backend %s: not in the file", backend)
	}
	servers, err := sec.Servers()
	if err != nil {
		return nil, err
	}
	held, err := c.backendServers(ctx, backend)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]ServerState, len(held))
	for _, s := range held {
		if s.Backend == backend {
			byName[s.Name] = s
		}
	}
	want := make(map[string]Server, len(servers))
	for _, s := range servers {
		want[s.Name] = sec.merged(s)
	}
	var leftover []Op
	if names == nil {
		names = slices.Sorted(maps.Keys(want))
		for _, s := range held {
			if _, wanted := want[s.Name]; wanted || s.Backend != backend {
				continue
			}
			names = append(names, s.Name)
			if s.Maint() && validName(s.Backend) && validName(s.Name) {
				leftover = append(leftover, Op{Action: DelServer, Backend: s.Backend, Server: s.Name})
			}
		}
	}
	var errs []error
	for _, name := range names {
		got, held := byName[name]
		w, wanted := want[name]
		id := backend + "/" + name
		switch {
		case !wanted && held && !got.Maint():
			errs = append(errs, fmt.Errorf("%s: not in the file but serving", id))
		case wanted && !held:
			errs = append(errs, fmt.Errorf("%s: in the file but not in HAProxy", id))
		case wanted:
			if err := matches(got, w); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", id, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return leftover, nil
}

// matches says how a held server differs from its line in the file.
func matches(got ServerState, w Server) error {
	ap, ok := w.addrPort()
	weight, ok2 := w.weight()
	if !ok || !ok2 {
		return fmt.Errorf("line %d cannot be compared", w.Line)
	}
	if got.Addr.Unmap() != ap.Addr().Unmap() || got.Port != int(ap.Port()) {
		return fmt.Errorf("HAProxy has %s, the file %s", netip.AddrPortFrom(got.Addr, uint16(got.Port)), ap)
	}
	if got.Weight != weight {
		return fmt.Errorf("HAProxy has weight %d, the file %d", got.Weight, weight)
	}
	if got.Maint() != w.disabled() {
		return fmt.Errorf("HAProxy has state %s, the file %s", state(got.Maint()), state(w.disabled()))
	}
	return nil
}
