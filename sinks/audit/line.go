package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// Line ops written by the sink itself, beside the data ops upsert and delete
// and the engine's decision kinds (node.DecisionKind).
const (
	opUpsert    = "upsert"
	opDelete    = "delete"
	opOpen      = "open"      // the sink opened the trail (a start or restart)
	opRotate    = "rotate"    // first line of a file after rotation
	opRetention = "retention" // an old file was deleted
)

// line is one trail line before encoding. Optional fields are left out when
// empty.
type line struct {
	seq    uint64
	op     string
	time   time.Time
	node   string
	key    string
	value  any  // JSON-like; written when hasVal
	hasVal bool // a null value is still written
	digest string
	source map[string]any
	gen    uint64
	reason string
	detail map[string]any
}

// zeroHash is the prev of the first line of a trail.
var zeroHash [sha256.Size]byte

// hashSuffixLen is the length of `,"hash":"<64 hex>"}` that ends every line
// (before the newline): the canonical line is the line without it, closed
// by "}".
const hashSuffixLen = len(`,"hash":"`) + 2*sha256.Size + len(`"}`)

// prevSuffixLen is the length of `,"prev":"<64 hex>"` just before the hash.
const prevSuffixLen = len(`,"prev":"`) + 2*sha256.Size + 1

// encode appends the full line (with its hash and a newline) to buf and
// returns it with the line's hash. Fields come in a fixed order, and values
// are encoded by encoding/json (maps sorted by key), so the same line always
// has the same bytes: hash = sha256(prev || canonical line).
func (l *line) encode(buf []byte, prev [sha256.Size]byte) ([]byte, [sha256.Size]byte, error) {
	start := len(buf)
	buf = append(buf, `{"seq":`...)
	buf = strconv.AppendUint(buf, l.seq, 10)
	buf = append(buf, `,"op":`...)
	buf = appendString(buf, l.op)
	buf = append(buf, `,"time":"`...)
	buf = l.time.UTC().AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, `","node":`...)
	buf = appendString(buf, l.node)
	if l.key != "" {
		buf = append(buf, `,"key":`...)
		buf = appendString(buf, l.key)
	}
	var err error
	if l.hasVal {
		if buf, err = appendJSON(append(buf, `,"value":`...), l.value); err != nil {
			return buf[:start], [sha256.Size]byte{}, err
		}
	}
	if l.digest != "" {
		buf = appendString(append(buf, `,"digest":`...), l.digest)
	}
	if len(l.source) > 0 {
		if buf, err = appendJSON(append(buf, `,"source":`...), l.source); err != nil {
			return buf[:start], [sha256.Size]byte{}, err
		}
	}
	buf = append(buf, `,"config_generation":`...)
	buf = strconv.AppendUint(buf, l.gen, 10)
	if l.reason != "" {
		buf = appendString(append(buf, `,"reason":`...), l.reason)
	}
	if len(l.detail) > 0 {
		if buf, err = appendJSON(append(buf, `,"detail":`...), l.detail); err != nil {
			return buf[:start], [sha256.Size]byte{}, err
		}
	}
	buf = append(buf, `,"prev":"`...)
	buf = hex.AppendEncode(buf, prev[:])
	buf = append(buf, '"')
	sum := chainHash(prev, buf[start:])
	buf = append(buf, `,"hash":"`...)
	buf = hex.AppendEncode(buf, sum[:])
	buf = append(buf, "\"}\n"...)
	return buf, sum, nil
}

// chainHash is sha256(prev || body || "}"), body being the canonical line
// without its closing brace.
func chainHash(prev [sha256.Size]byte, body []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write(prev[:])
	h.Write(body)
	h.Write([]byte{'}'})
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

func appendJSON(buf []byte, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return buf, err
	}
	return append(buf, b...), nil
}

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json does.
func appendString(buf []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				buf = append(buf, '\\', c)
			case c < 0x20:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				buf = append(buf, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, `\ufffd`...)
		} else {
			buf = append(buf, s[i:i+size]...)
		}
		i += size
	}
	return append(buf, '"')
}
