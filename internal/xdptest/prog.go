package xdptest

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// XDP return codes.
const (
	xdpDrop = 1
	xdpPass = 2
)

// AllowList loads an XDP program that passes non-IPv4 frames (ARP), drops
// IPv4 packets too short to hold a header, and drops IPv4 packets whose
// source address is not a key of m. m is a hash map keyed by the 4-byte
// address, or (lpm true) an LPM trie keyed by {u32 prefixlen; u32 addr}.
func AllowList(m *ebpf.Map, lpm bool) (*ebpf.Program, error) {
	keyOff := int16(-4)
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R6, 0, asm.Word), // data
		asm.LoadMem(asm.R3, asm.R6, 4, asm.Word), // data_end
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 34), // ethernet (14) + IPv4 header (20)
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 12, asm.Half),   // ethertype, network order
		asm.JNE.Imm(asm.R5, 0x0008, "pass"),         // 0x0800 read little-endian
		asm.LoadMem(asm.R5, asm.R2, 26, asm.Word),   // IPv4 source address
		asm.StoreMem(asm.RFP, -4, asm.R5, asm.Word), // key (or its address part)
	}
	if lpm {
		keyOff = -8
		insns = append(insns, asm.StoreImm(asm.RFP, -8, 32, asm.Word)) // prefixlen
	}
	insns = append(insns,
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, int32(keyOff)),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "drop"),
		asm.Mov.Imm(asm.R0, xdpPass).WithSymbol("pass"),
		asm.Return(),
		asm.Mov.Imm(asm.R0, xdpDrop).WithSymbol("drop"),
		asm.Return(),
	)
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "allowlist", Type: ebpf.XDP, Instructions: insns, License: "GPL"})
	if err != nil {
		return nil, fmt.Errorf("load XDP allow-list program: %w", err)
	}
	return prog, nil
}
