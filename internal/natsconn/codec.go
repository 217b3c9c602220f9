package natsconn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/internal/ctyconv"
)

// EncodeValue is the one encoding of a record value on NATS (a KV value, the
// value of a published message): compact JSON with sorted object keys, so
// equal values give equal bytes and a mirror compares bytes. The server
// needs the raw value, so marks are dropped; marked reports whether any
// part carried one (a sensitive value), for the caller to mark what it
// shows.
func EncodeValue(v cty.Value) (b []byte, marked bool, err error) {
	raw, marked := ctyconv.FromCtyMarked(v)
	b, err = json.Marshal(raw)
	if err != nil {
		return nil, marked, fmt.Errorf("encode value: %w", err)
	}
	return b, marked, nil
}

// DecodeValue parses what EncodeValue wrote (or any JSON a foreign writer
// put). Numbers keep their exact text.
func DecodeValue(b []byte) (cty.Value, error) {
	if len(b) == 0 {
		return cty.NullVal(cty.DynamicPseudoType), nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return cty.NilVal, fmt.Errorf("decode value: %w", err)
	}
	v, err := ctyconv.ToCty(x)
	if err != nil {
		return cty.NilVal, fmt.Errorf("decode value: %w", err)
	}
	return v, nil
}

// ErrEmptyKey is returned by EscapeKey for the empty key, which KV cannot hold.
var ErrEmptyKey = errors.New("empty key")

// EscapeKey turns a record key into a valid KV key part, reversibly: bytes
// outside [A-Za-z0-9_/-.] and "=" itself become "=XX" (hex), and so does a
// dot that would start or end the key or follow another dot (KV keys are
// dot-separated subject tokens, none of them empty). IPv4 and namespace/name
// keys pass unchanged; "fd00::1" becomes "fd00=3A=3A1".
func EscapeKey(k string) (string, error) {
	if k == "" {
		return "", ErrEmptyKey
	}
	var b strings.Builder
	b.Grow(len(k))
	for i := 0; i < len(k); i++ {
		c := k[i]
		plain := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '/'
		if c == '.' {
			plain = i > 0 && i < len(k)-1 && k[i-1] != '.'
		}
		if plain {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "=%02X", c)
		}
	}
	return b.String(), nil
}

// UnescapeKey reverses EscapeKey.
func UnescapeKey(s string) (string, error) {
	if !strings.Contains(s, "=") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return "", fmt.Errorf("invalid escape in key %q", s)
		}
		b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
		i += 2
	}
	return b.String(), nil
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'A' + 10
}

// ValidPrefix reports why p cannot prefix KV keys, or "" when it can: only
// [A-Za-z0-9_/-.=] and no empty dot-separated token except at the end.
func ValidPrefix(p string) string {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_/-.=", c) >= 0) {
			return fmt.Sprintf("character %q is not allowed in a key", c)
		}
	}
	if strings.HasPrefix(p, ".") || strings.Contains(p, "..") {
		return "a key cannot start with a dot or hold two dots in a row"
	}
	return ""
}
