// Package xdptest is test support for kernel-enforced end-to-end tests: an
// XDP program, written with cilium/ebpf's asm (no clang), that drops IPv4
// packets whose source address is not in a BPF map, and a pair of network
// namespaces joined by a veth pair to ping across. Everything it creates is
// named uniquely and removed by Close. Tests only; needs root.
package xdptest
