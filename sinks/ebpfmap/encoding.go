package ebpfmap

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/pipeline/pipeline/schema"
)

// encoding turns a cty value into the bytes of one map key, value or
// struct field, and bytes back into a canonical string. Sizes and
// alignments follow C (struct in_addr, struct in6_addr, __uN).
type encoding struct {
	name  string // as written: "ipv4", "u32", "string(16)", "struct"
	size  int
	align int
	order binary.ByteOrder // uN only
	// struct only
	fields []field
}

type field struct {
	name   string
	offset int
	enc    *encoding
}

// sized is compiled at its first use, not at every start of the program.
var sized = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(string|bytes)\((\d+)\)$`) })

// Scalar type names, for docs and errors.
var scalarTypes = []string{"ipv4", "ipv6", "ip", "ipv4_prefix", "ipv6_prefix", "ip_prefix", "u8", "u16", "u32", "u64", "string(N)", "bytes(N)", "struct"}

// parseScalar parses a non-struct type name.
func parseScalar(name, order string) (*encoding, error) {
	e := &encoding{name: name}
	switch name {
	case "ipv4":
		e.size, e.align = 4, 4
	case "ipv6", "ip":
		e.size, e.align = 16, 4
	case "ipv4_prefix":
		e.size, e.align = 8, 4
	case "ipv6_prefix", "ip_prefix":
		e.size, e.align = 20, 4
	case "u8", "u16", "u32", "u64":
		bits, _ := strconv.Atoi(name[1:])
		e.size, e.align = bits/8, bits/8
		switch order {
		case "", "host":
			e.order = binary.NativeEndian
		case "be":
			e.order = binary.BigEndian
		case "le":
			e.order = binary.LittleEndian
		default:
			return nil, fmt.Errorf("byte_order %q: use host, be or le", order)
		}
		return e, nil
	default:
		m := sized().FindStringSubmatch(name)
		if m == nil {
			msg := fmt.Sprintf("unknown type %q; the types are %s", name, strings.Join(scalarTypes, ", "))
			if s := schema.DidYouMean(name, scalarTypes); s != "" {
				msg += fmt.Sprintf(". Did you mean %q?", s)
			}
			return nil, errors.New(msg)
		}
		n, err := strconv.Atoi(m[2])
		if err != nil || n < 1 || n > 4096 {
			return nil, fmt.Errorf("%s: the size must be between 1 and 4096 bytes", name)
		}
		e.size, e.align = n, 1
	}
	if order != "" && order != "host" {
		return nil, fmt.Errorf("byte_order applies only to u8, u16, u32 and u64, not %s", name)
	}
	return e, nil
}

// layoutStruct places fields with C alignment rules and pads the end to the
// largest alignment, so the result matches the C struct.
func layoutStruct(fields []field) *encoding {
	e := &encoding{name: "struct", align: 1}
	off := 0
	for i := range fields {
		f := &fields[i]
		off = alignUp(off, f.enc.align)
		f.offset = off
		off += f.enc.size
		e.align = max(e.align, f.enc.align)
	}
	e.size = alignUp(off, e.align)
	e.fields = fields
	return e
}

// hostOrder reports whether a uN encoding uses the host's byte order.
func (e *encoding) hostOrder() bool {
	return e.order == nil || e.order.Uint16([]byte{1, 0}) == binary.NativeEndian.Uint16([]byte{1, 0})
}

// describe names the encoding with its byte order when not the host's.
func (e *encoding) describe() string {
	if e.order != nil && !e.hostOrder() {
		return e.name + " (byte_order " + map[bool]string{true: "be", false: "le"}[e.order.Uint16([]byte{0, 1}) == 1] + ")"
	}
	return e.name
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }

func (e *encoding) isPrefix() bool { return strings.HasSuffix(e.name, "_prefix") }

// encode writes v into b (len(b) == e.size). Struct values are encoded by
// the caller field by field. The kernel needs the raw value, so a value
// marked sensitive is unmarked here, and an error about it does not show it.
func (e *encoding) encode(v cty.Value, b []byte) error {
	if schema.IsSensitive(v) {
		v, _ = v.UnmarkDeep()
		if err := e.encodeRaw(v, b); err != nil {
			return fmt.Errorf("a sensitive value (not shown) does not fit %s", e.name)
		}
		return nil
	}
	return e.encodeRaw(v, b)
}

func (e *encoding) encodeRaw(v cty.Value, b []byte) error {
	if v.IsNull() || !v.IsKnown() {
		return errors.New("value is null or unknown")
	}
	switch {
	case e.name == "ipv4" || e.name == "ipv6" || e.name == "ip":
		return e.encodeIP(v, b)
	case e.isPrefix():
		return e.encodePrefix(v, b)
	case e.name[0] == 'u':
		return e.encodeUint(v, b)
	case strings.HasPrefix(e.name, "string("):
		s, err := asString(v)
		if err != nil {
			return err
		}
		if len(s) >= e.size {
			return fmt.Errorf("string of %d bytes does not fit %s (NUL terminator included)", len(s), e.name)
		}
		copy(b, s)
		clear(b[len(s):])
		return nil
	}
	return e.encodeBytes(v, b)
}

func asString(v cty.Value) (string, error) {
	s, err := convert.Convert(v, cty.String)
	if err != nil {
		return "", fmt.Errorf("want a string, got %s", v.Type().FriendlyName())
	}
	return s.AsString(), nil
}

func (e *encoding) encodeIP(v cty.Value, b []byte) error {
	s, err := asString(v)
	if err != nil {
		return err
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimSuffix(s, "/32"), "/128"))
	if err != nil {
		return fmt.Errorf("%q is not an IP address", s)
	}
	a = a.WithZone("")
	switch e.name {
	case "ipv4":
		if a = a.Unmap(); !a.Is4() {
			return fmt.Errorf("%s is not an IPv4 address", a)
		}
		v4 := a.As4()
		copy(b, v4[:])
	case "ipv6":
		if a.Is4() {
			return fmt.Errorf("%s is not an IPv6 address (use type \"ip\" for dual stack)", a)
		}
		v6 := a.As16()
		copy(b, v6[:])
	default:
		v6 := a.As16() // IPv4 as v4-mapped ::ffff:a.b.c.d
		copy(b, v6[:])
	}
	return nil
}

func (e *encoding) encodePrefix(v cty.Value, b []byte) error {
	s, err := asString(v)
	if err != nil {
		return err
	}
	var p netip.Prefix
	if strings.Contains(s, "/") {
		if p, err = netip.ParsePrefix(s); err != nil {
			return fmt.Errorf("%q is not a CIDR prefix", s)
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return fmt.Errorf("%q is neither an IP address nor a CIDR prefix", s)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	p = p.Masked()
	a, bits := p.Addr(), p.Bits()
	switch {
	case e.name == "ipv4_prefix" && !a.Unmap().Is4():
		return fmt.Errorf("%s is not an IPv4 prefix", p)
	case e.name == "ipv6_prefix" && a.Is4():
		return fmt.Errorf("%s is not an IPv6 prefix (use ip_prefix for dual stack)", p)
	}
	binary.NativeEndian.PutUint32(b[:4], uint32(bits))
	if e.name == "ipv4_prefix" {
		if a.Is4In6() {
			bits -= 96
			binary.NativeEndian.PutUint32(b[:4], uint32(bits))
		}
		v4 := a.Unmap().As4()
		copy(b[4:], v4[:])
		return nil
	}
	if a.Is4() {
		binary.NativeEndian.PutUint32(b[:4], uint32(bits+96))
	}
	v6 := a.As16()
	copy(b[4:], v6[:])
	return nil
}

func (e *encoding) encodeUint(v cty.Value, b []byte) error {
	if v.Type() == cty.Bool {
		v = cty.NumberIntVal(map[bool]int64{false: 0, true: 1}[v.True()])
	}
	n, err := convert.Convert(v, cty.Number)
	if err != nil {
		return fmt.Errorf("want a number, got %s", v.Type().FriendlyName())
	}
	bf := n.AsBigFloat()
	if bf.IsInf() || !bf.IsInt() {
		// Uint64 says Exact for a fraction of 64 bits or fewer (1.5 -> 1).
		return fmt.Errorf("%s is not an integer, so does not fit %s", bf.Text('g', 20), e.name)
	}
	i, acc := bf.Uint64()
	if acc != big.Exact || bf.Sign() < 0 || (e.size < 8 && i >= 1<<(8*e.size)) {
		return fmt.Errorf("%s does not fit %s", bf.Text('g', 20), e.name)
	}
	switch e.size {
	case 1:
		b[0] = byte(i)
	case 2:
		e.order.PutUint16(b, uint16(i))
	case 4:
		e.order.PutUint32(b, uint32(i))
	default:
		e.order.PutUint64(b, i)
	}
	return nil
}

// encodeBytes accepts a hex string or a list of numbers 0-255.
func (e *encoding) encodeBytes(v cty.Value, b []byte) error {
	var raw []byte
	if v.Type() == cty.String {
		h, err := hex.DecodeString(strings.TrimPrefix(v.AsString(), "0x"))
		if err != nil {
			return fmt.Errorf("bytes must be a hex string or a list of numbers: %w", err)
		}
		raw = h
	} else if v.CanIterateElements() {
		for it := v.ElementIterator(); it.Next(); {
			_, x := it.Element()
			var one [1]byte
			if err := (&encoding{name: "u8", size: 1}).encodeUint(x, one[:]); err != nil {
				return err
			}
			raw = append(raw, one[0])
		}
	} else {
		return fmt.Errorf("bytes must be a hex string or a list of numbers, not %s", v.Type().FriendlyName())
	}
	if len(raw) != e.size {
		return fmt.Errorf("%d bytes given for %s", len(raw), e.name)
	}
	copy(b, raw)
	return nil
}

// canonical renders encoded bytes as the key string plan and diff use.
func (e *encoding) canonical(b []byte) string { return string(e.appendCanonical(nil, b)) }

// appendCanonical appends the canonical string of b to dst: an address or
// prefix as netip prints it, an integer in decimal, a string up to its NUL,
// bytes in hex, and a struct as name=value pairs in declaration order.
func (e *encoding) appendCanonical(dst, b []byte) []byte {
	switch {
	case e.name == "struct":
		for i, f := range e.fields {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(append(dst, f.name...), '=')
			dst = f.enc.appendCanonical(dst, b[f.offset:f.offset+f.enc.size])
		}
		return dst
	case e.name == "ipv4":
		return netip.AddrFrom4([4]byte(b)).AppendTo(dst)
	case e.name == "ipv6":
		return netip.AddrFrom16([16]byte(b)).AppendTo(dst)
	case e.name == "ip":
		return netip.AddrFrom16([16]byte(b)).Unmap().AppendTo(dst)
	case e.isPrefix():
		return e.prefixOf(b).AppendTo(dst)
	case e.name[0] == 'u':
		return strconv.AppendUint(dst, e.uint(b), 10)
	case strings.HasPrefix(e.name, "string("):
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		return append(dst, b...)
	}
	return hex.AppendEncode(dst, b)
}

// prefixOf decodes an LPM key. Bytes the kernel holds but Prepare would
// never write (a prefix length beyond the address, host bits) still decode
// to a distinct, printable prefix, so drift shows and is repaired.
func (e *encoding) prefixOf(b []byte) netip.Prefix {
	bits := int(binary.NativeEndian.Uint32(b))
	if e.name == "ipv4_prefix" {
		return netip.PrefixFrom(netip.AddrFrom4([4]byte(b[4:])), bits)
	}
	a := netip.AddrFrom16([16]byte(b[4:]))
	if a.Is4In6() && e.name == "ip_prefix" && bits >= 96 {
		return netip.PrefixFrom(a.Unmap(), bits-96)
	}
	return netip.PrefixFrom(a, bits)
}

// uint decodes a u8/u16/u32/u64.
func (e *encoding) uint(b []byte) uint64 {
	switch e.size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(e.order.Uint16(b))
	case 4:
		return uint64(e.order.Uint32(b))
	}
	return e.order.Uint64(b)
}
