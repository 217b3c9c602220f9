package xdptest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"runtime"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netns"
)

// Pair is two network namespaces, A and B, joined by a veth pair:
// A holds AddrA on its end, B holds AddrB.
type Pair struct {
	NSA, NSB     string
	DevA, DevB   string
	AddrA, AddrB netip.Addr
	links        []link.Link
}

// NewPair creates the namespaces and the veth pair. subnet picks the /24
// 10.199.<subnet>.0 used inside the namespaces (test hosts only). It fails
// first, naming the command and its package, when ip or ping is missing.
func NewPair(subnet int) (*Pair, error) {
	if err := lookTools(); err != nil {
		return nil, err
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	p := &Pair{NSA: "pla-" + id, NSB: "plb-" + id, DevA: "va" + id, DevB: "vb" + id,
		AddrA: netip.AddrFrom4([4]byte{10, 199, byte(subnet), 1}), AddrB: netip.AddrFrom4([4]byte{10, 199, byte(subnet), 2})}
	steps := [][]string{
		{"netns", "add", p.NSA}, {"netns", "add", p.NSB},
		{"link", "add", p.DevA, "type", "veth", "peer", "name", p.DevB},
		{"link", "set", p.DevA, "netns", p.NSA}, {"link", "set", p.DevB, "netns", p.NSB},
		{"-n", p.NSA, "addr", "add", p.AddrA.String() + "/24", "dev", p.DevA},
		{"-n", p.NSB, "addr", "add", p.AddrB.String() + "/24", "dev", p.DevB},
		{"-n", p.NSA, "link", "set", p.DevA, "up"}, {"-n", p.NSB, "link", "set", p.DevB, "up"},
		{"-n", p.NSA, "link", "set", "lo", "up"}, {"-n", p.NSB, "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			p.Close()
			return nil, fmt.Errorf("ip %s: %w: %s", strings.Join(s, " "), err, out)
		}
	}
	return p, nil
}

// AttachToB attaches prog as XDP on B's veth end, so it filters what A sends.
func (p *Pair) AttachToB(prog *ebpf.Program) error {
	return p.inB(func() error {
		iface, err := net.InterfaceByName(p.DevB)
		if err != nil {
			return fmt.Errorf("find %s: %w", p.DevB, err)
		}
		l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: iface.Index})
		if err != nil {
			return fmt.Errorf("attach XDP to %s: %w", p.DevB, err)
		}
		p.links = append(p.links, l)
		return nil
	})
}

// inB runs f on a thread switched into namespace B. The thread goes back to
// the scheduler only when it is back in its own namespace; otherwise it
// stays locked and dies with the goroutine, so no other goroutine ever
// runs in B by accident.
func (p *Pair) inB(f func() error) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("get current netns: %w", err)
	}
	defer orig.Close()
	target, err := netns.GetFromName(p.NSB)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open netns %s: %w", p.NSB, err)
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter netns %s: %w", p.NSB, err)
	}
	ferr := f()
	if err := netns.Set(orig); err != nil {
		return errors.Join(ferr, fmt.Errorf("leave netns %s: %w", p.NSB, err))
	}
	runtime.UnlockOSThread()
	return ferr
}

// Ping sends one echo request from A to B and reports whether a reply came
// within a second.
// NewPair has checked that ping exists, so a false is a lost packet.
func (p *Pair) Ping() bool {
	err := exec.Command("ip", "netns", "exec", p.NSA, "ping", "-c", "1", "-W", "1", p.AddrB.String()).Run()
	return err == nil
}

// Close detaches programs and removes the namespaces (which removes the veth pair).
func (p *Pair) Close() error {
	var errs []error
	for _, l := range p.links {
		errs = append(errs, l.Close())
	}
	p.links = nil
	for _, ns := range []string{p.NSA, p.NSB} {
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil && !strings.Contains(string(out), "No such file") {
			errs = append(errs, fmt.Errorf("ip netns del %s: %w: %s", ns, err, out))
		}
	}
	return errors.Join(errs...)
}
