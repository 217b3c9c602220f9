package ebpfmap

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// TestValidationErrors: impossible declarations are diagnostics at load
// time, pointing at the line that is wrong, without touching the kernel.
func TestValidationErrors(t *testing.T) {
	const pin = "pin = \"/sys/fs/bpf/x\"\n"
	for _, tc := range []struct {
		name, body string
		summary    string // of the first error
		detail     string // part of its detail
		at         string // text of the line its subject starts on
	}{
		{"lpm needs prefix key", pin + "type = \"lpm_trie\"\nkey { type = \"ipv4\" }\n" + u8Value,
			"Key encoding does not fit the map type", "needs a prefix key", `type = "lpm_trie"`},
		{"prefix key outside lpm", pin + "key { type = \"ipv4_prefix\" }\n" + u8Value,
			"Key encoding does not fit the map type", "only makes sense in an lpm_trie", `key { type = "ipv4_prefix" }`},
		{"unknown encoding", pin + "key { type = \"ipv5\" }\n" + u8Value,
			"Invalid encoding", `Did you mean "ipv4"?`, `key { type = "ipv5" }`},
		{"byte order on string", pin + "key { type = \"ipv4\" }\nvalue {\n type = \"string(4)\"\n byte_order = \"be\"\n from = \"a\"\n}",
			"Invalid encoding", "byte_order applies only to", `byte_order = "be"`},
		{"relative pin", "pin = \"x\"\nkey { type = \"ipv4\" }\n" + u8Value,
			"Invalid pin path", "absolute path", `pin = "x"`},
		{"value without from", pin + "key { type = \"ipv4\" }\nvalue { type = \"u8\" }",
			"Missing value source", "from = 1", `value { type = "u8" }`},
		{"array with ip key", pin + "type = \"array\"\nkey { type = \"ipv4\" }\n" + u8Value,
			"Key encoding does not fit the map type", "host-order u32 key, not ipv4", `type = "array"`},
		{"array with big-endian key", pin + "type = \"percpu_array\"\nkey {\n type = \"u32\"\n byte_order = \"be\"\n from = 1\n}\n" + u8Value,
			"Key encoding does not fit the map type", "not u32 (byte_order be)", `type = "percpu_array"`},
		{"from uses wrong root", pin + "key {\n type = \"ipv4\"\n from = object.key\n}\n" + u8Value,
			"", "", "from = object.key"},
		{"zero-size string", pin + "key { type = \"string(0)\" }\n" + u8Value,
			"Invalid encoding", "between 1 and 4096", `key { type = "string(0)" }`},
		{"key too big", pin + "key { type = \"bytes(600)\" }\n" + u8Value,
			"Key encoding does not fit the map type", "at most 512", `key { type = "bytes(600)" }`},
		{"unknown flag", pin + "map_flags = [\"no_prealoc\"]\nkey { type = \"ipv4\" }\n" + u8Value,
			"Unknown map flag", `Did you mean "no_prealloc"?`, "map_flags"},
		{"flag for another type", pin + "map_flags = [\"no_common_lru\"]\nkey { type = \"ipv4\" }\n" + u8Value,
			"Map flag does not fit the map type", "not hash", "map_flags"},
		{"conflicting flags", pin + "map_flags = [\"rdonly_prog\", \"wronly_prog\"]\nkey { type = \"ipv4\" }\n" + u8Value,
			"Conflicting map flags", "exclude each other", "map_flags"},
		{"nested struct", pin + "key { type = \"ipv4\" }\nvalue {\n type = \"struct\"\n field \"a\" {\n  type = \"struct\"\n  from = 1\n }\n}",
			"Nested struct", "scalar", `type = "struct"`},
		{"duplicate field", pin + "key { type = \"ipv4\" }\nvalue {\n type = \"struct\"\n field \"a\" {\n  type = \"u8\"\n  from = 1\n }\n field \"a\" {\n  type = \"u8\"\n  from = 2\n }\n}",
			"Duplicate struct field", `"a"`, `field "a"`},
		{"max_entries zero", pin + "max_entries = 0\nkey { type = \"ipv4\" }\n" + u8Value,
			"Invalid max_entries", "between 1 and", "max_entries = 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := "input = transform.extract.ips\n" + tc.body
			_, diags := nodetest.Build(t, Spec(), body, records)
			if !diags.HasErrors() {
				t.Fatal("want a diagnostic")
			}
			d := diags.Errs()[0]
			if tc.summary == "" { // reported by the schema package
				return
			}
			var first = diags[0]
			for _, x := range diags {
				if x.Summary == tc.summary {
					first = x
					break
				}
			}
			if first.Summary != tc.summary || !strings.Contains(first.Detail, tc.detail) {
				t.Fatalf("got %v; want %q with %q", d, tc.summary, tc.detail)
			}
			lines := strings.Split(`sink "ebpf_map" "test" {`+"\n"+body, "\n")
			if first.Subject == nil || first.Subject.Start.Line > len(lines) {
				t.Fatalf("no usable subject: %v", first.Subject)
			}
			if got := lines[first.Subject.Start.Line-1]; !strings.Contains(got, tc.at) {
				t.Fatalf("subject on line %d %q; want the line with %q", first.Subject.Start.Line, got, tc.at)
			}
		})
	}
}

// TestEncodingLayouts checks sizes without a kernel.
func TestEncodingLayouts(t *testing.T) {
	for _, tc := range []struct {
		typ         string
		size, align int
	}{
		{"ipv4", 4, 4}, {"ipv6", 16, 4}, {"ip", 16, 4}, {"ipv4_prefix", 8, 4}, {"ipv6_prefix", 20, 4},
		{"ip_prefix", 20, 4}, {"u8", 1, 1}, {"u16", 2, 2}, {"u32", 4, 4}, {"u64", 8, 8},
		{"string(16)", 16, 1}, {"bytes(6)", 6, 1},
	} {
		e, err := parseScalar(tc.typ, "")
		if err != nil || e.size != tc.size || e.align != tc.align {
			t.Errorf("%s: size %v align %v err %v; want %d, %d", tc.typ, e.size, e.align, err, tc.size, tc.align)
		}
	}
	// struct { __u8 a; __u64 b; __u16 c; } is 24 bytes: b at 8, c at 16.
	u8, _ := parseScalar("u8", "")
	u64, _ := parseScalar("u64", "")
	u16, _ := parseScalar("u16", "")
	s := layoutStruct([]field{{name: "a", enc: u8}, {name: "b", enc: u64}, {name: "c", enc: u16}})
	if got := fmt.Sprint(s.size, s.fields[1].offset, s.fields[2].offset); got != "24 8 16" {
		t.Fatalf("size, offsets = %s; want 24 8 16", got)
	}
}
