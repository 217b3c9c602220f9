package xdptest

import (
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("XDP tests need root, and CI runs as root")
	}
	t.Skip("skipping XDP test: needs root (CAP_BPF, CAP_NET_ADMIN)")
}

// frame builds an Ethernet + IPv4 header with the given source address.
func frame(src [4]byte) []byte {
	f := make([]byte, 64)
	f[12], f[13] = 0x08, 0x00 // IPv4
	f[14] = 0x45
	copy(f[26:30], src[:])
	return f
}

func TestProgramLogic(t *testing.T) {
	requireRoot(t)
	for _, lpm := range []bool{false, true} {
		spec := &ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 1, MaxEntries: 8}
		key := func(a [4]byte) []byte { return a[:] }
		if lpm {
			spec = &ebpf.MapSpec{Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 1, MaxEntries: 8, Flags: 1}
			key = func(a [4]byte) []byte { return append([]byte{24, 0, 0, 0}, a[0], a[1], a[2], 0) }
		}
		m, err := ebpf.NewMap(spec)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		prog, err := AllowList(m, lpm)
		if err != nil {
			t.Fatal(err)
		}
		defer prog.Close()
		run := func(f []byte) uint32 {
			ret, _, err := prog.Test(f)
			if err != nil {
				t.Fatal(err)
			}
			return ret
		}
		allowed := [4]byte{10, 1, 2, 3}
		if got := run(frame(allowed)); got != xdpDrop {
			t.Fatalf("lpm=%v: empty map: got %d, want drop", lpm, got)
		}
		if err := m.Put(key(allowed), uint8(1)); err != nil {
			t.Fatal(err)
		}
		if got := run(frame(allowed)); got != xdpPass {
			t.Fatalf("lpm=%v: allowed source: got %d, want pass", lpm, got)
		}
		arp := frame(allowed)
		arp[12], arp[13] = 0x08, 0x06
		if got := run(arp); got != xdpPass {
			t.Fatalf("ARP must pass, got %d", got)
		}
	}
}

func TestPingEnforced(t *testing.T) {
	Require(t)
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 1, MaxEntries: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	prog, err := AllowList(m, false)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	p, err := NewPair(201)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	}()
	if !p.Ping() {
		t.Fatal("ping A->B fails before any program is attached")
	}
	if err := p.AttachToB(prog); err != nil {
		t.Fatal(err)
	}
	if p.Ping() {
		t.Fatal("ping A->B passes with an empty allow-list")
	}
	a := p.AddrA.As4()
	if err := m.Put(a[:], uint8(1)); err != nil {
		t.Fatal(err)
	}
	if !p.Ping() {
		t.Fatal("ping A->B fails with A allowed")
	}
	if err := m.Delete(a[:]); err != nil {
		t.Fatal(err)
	}
	if p.Ping() {
		t.Fatal("ping A->B passes after A was removed")
	}
}

// TestMissingNamesTools: without ip and ping on PATH, Missing and NewPair
// name each command and the package that provides it.
func TestMissingNamesTools(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	miss := Missing()
	for _, want := range []string{"the ip command: apt-get install iproute2", "the ping command: apt-get install iputils-ping"} {
		if !strings.Contains(miss, want) {
			t.Errorf("Missing() = %q, want it to name %q", miss, want)
		}
	}
	if _, err := NewPair(250); err == nil || !strings.Contains(err.Error(), "install the iproute2 package") {
		t.Errorf("NewPair without ip: %v", err)
	}
}
