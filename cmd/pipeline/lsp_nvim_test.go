package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/protocol"
)

// nvimScript drives Neovim's built-in LSP client (0.7: start_client,
// buf_request_sync) against `pipeline lsp`, and writes what the server
// answered to a JSON file. Every wait polls with a deadline.
const nvimScript = `
local bin, file, out = %q, %q, %q
local L = { type = %d, sink = %d, max_entries = %d, input = %d, for_each = %d }
local res = { diags = {} }
local function finish(err)
  res.err = err
  vim.fn.writefile({ vim.fn.json_encode(res) }, out)
  vim.cmd("qa!")
end
local ok, err = pcall(function()
  local ready, latest = false, nil
  local id = vim.lsp.start_client({
    cmd = { bin, "lsp", "--debounce", "50ms" },
    root_dir = vim.fn.fnamemodify(file, ":h"),
    flags = { debounce_text_changes = 0 },
    on_init = function() ready = true end,
    handlers = { ["textDocument/publishDiagnostics"] = function(_, result)
      latest = result
      table.insert(res.diags, #result.diagnostics)
    end },
  })
  vim.cmd("edit " .. file)
  local buf = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(buf, id)
  if not vim.wait(20000, function() return ready and latest ~= nil end, 10) then error("no first diagnostics") end
  if #latest.diagnostics ~= 0 then error("the example has diagnostics: " .. vim.inspect(latest)) end
  local uri = vim.uri_from_bufnr(buf)
  local function at(line, col)
    return { textDocument = { uri = uri }, position = { line = line, character = col } }
  end
  local function ask(method, params)
    local r = vim.lsp.buf_request_sync(buf, method, params, 10000)
    if not r or not r[id] then error("no answer to " .. method) end
    if r[id].err then error(method .. ": " .. vim.inspect(r[id].err)) end
    return r[id].result
  end

  -- hover the attribute name max_entries
  res.hover = ask("textDocument/hover", at(L.max_entries, 4)).contents.value
  -- jump from input = transform.extract.pod_ips to the block
  local line = vim.api.nvim_buf_get_lines(buf, L.input, L.input + 1, false)[1]
  local def = ask("textDocument/definition", at(L.input, string.find(line, "pod_ips")))
  res.definition = { uri = def[1].uri, line = def[1].range.start.line }

  -- type a mistake and wait for its diagnostic
  local text = vim.api.nvim_buf_get_lines(buf, L.type, L.type + 1, false)[1]
  vim.api.nvim_buf_set_lines(buf, L.type, L.type + 1, false, { (text:gsub('"hash"', '"hashh"')) })
  if not vim.wait(20000, function() return #latest.diagnostics > 0 end, 10) then error("no diagnostic for the mistake") end
  res.diagnostic = latest.diagnostics[1]

  -- a new line inside sink "ebpf_map": complete its attributes
  vim.api.nvim_buf_set_lines(buf, L.sink + 1, L.sink + 1, false, { "  " })
  local items = ask("textDocument/completion", at(L.sink + 1, 2))
  res.completion = {}
  for _, it in ipairs(items.items or items) do table.insert(res.completion, it.label) end

  -- a new line in transform "extract", reading the kubernetes source's objects
  local typed = "  where = object.metadata."
  vim.api.nvim_buf_set_lines(buf, L.for_each + 1, L.for_each + 1, false, { typed })
  items = ask("textDocument/completion", at(L.for_each + 1, #typed))
  res.fields = {}
  for _, it in ipairs(items.items or items) do table.insert(res.fields, it.label) end
end)
finish(ok and vim.NIL or tostring(err))
`

// nvimAndPipeline returns the paths of Neovim and of the pipeline test
// binary (installed by TestMain). Neovim missing skips, or fails in CI.
func nvimAndPipeline(t *testing.T) (nvim, bin string) {
	t.Helper()
	nvim, err := exec.LookPath("nvim")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("nvim is missing: scripts/setup.sh installs neovim")
		}
		t.Skip("nvim is not installed (apt-get install neovim)")
	}
	if bin, err = exec.LookPath("pipeline"); err != nil {
		t.Fatal(err)
	}
	return nvim, bin
}

// runNvim runs a Lua script in a headless Neovim whose home and state are
// in tmp, and returns what it printed.
func runNvim(t *testing.T, nvim, tmp, script string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", "luafile "+script)
	cmd.Env = append(os.Environ(), "HOME="+tmp, "XDG_CONFIG_HOME="+tmp, "XDG_DATA_HOME="+tmp, "XDG_STATE_HOME="+tmp, "XDG_CACHE_HOME="+tmp)
	cmd.Dir = tmp
	logs, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nvim: %v\n%s", err, logs)
	}
	return logs
}

// lineOf is the 0-based line holding sub.
func lineOf(t *testing.T, text, sub string) int {
	t.Helper()
	i := strings.Index(text, sub)
	if i < 0 {
		t.Fatalf("%q not in the text", sub)
	}
	return strings.Count(text[:i], "\n")
}

// TestLSPNeovim opens the flagship example in a real Neovim, headless:
// it hovers an attribute, jumps to a reference's block, types a mistake
// and gets validate's diagnostic at the right range, completes inside
// a sink "ebpf_map" block, and completes object.metadata. in the extract
// that reads the kubernetes source (the Pod's fields, less ignore_fields).
func TestLSPNeovim(t *testing.T) {
	nvim, bin := nvimAndPipeline(t)
	dir := copyExample(t, "flagship")
	main := filepath.Join(dir, "main.hcl")
	src := readString(t, main)
	tmp := t.TempDir()
	out := filepath.Join(tmp, "result.json")
	script := filepath.Join(tmp, "test.lua")
	lua := fmt.Sprintf(nvimScript, bin, main, out, lineOf(t, src, `type        = "hash"`), lineOf(t, src, `sink "ebpf_map" "allowed" {`),
		lineOf(t, src, "max_entries = 65536"), lineOf(t, src, "input    = transform.extract.pod_ips"), lineOf(t, src, "for_each = try(object.status.podIPs, [])"))
	if err := os.WriteFile(script, []byte(lua), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := runNvim(t, nvim, tmp, script)
	var res struct {
		Err        any    `json:"err"`
		Hover      string `json:"hover"`
		Definition struct {
			URI  string
			Line int
		}
		Diagnostic protocol.Diagnostic `json:"diagnostic"`
		Completion []string            `json:"completion"`
		Fields     []string            `json:"fields"`
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no result: %v\n%s", err, logs)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	t.Logf("neovim received %s", b)
	if res.Err != nil {
		t.Fatalf("script: %v\n%s", res.Err, logs)
	}

	// The diagnostic is validate's for the same text, at the same range.
	bad := strings.Replace(src, `type        = "hash"`, `type        = "hashh"`, 1)
	check := copyExample(t, "flagship")
	if err := os.WriteFile(filepath.Join(check, "main.hcl"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	want := validateDiags(t, check, filepath.Join(check, "main.hcl"))
	if len(want) != 1 || res.Diagnostic.Range != want[0].Range || res.Diagnostic.Message != want[0].Message {
		t.Errorf("neovim got diagnostic %+v, validate says %+v", res.Diagnostic, want)
	}
	if !strings.Contains(res.Hover, "**max_entries** `number`") {
		t.Errorf("hover: %q", res.Hover)
	}
	if !strings.HasSuffix(res.Definition.URI, "/main.hcl") || res.Definition.Line != lineOf(t, src, `transform "extract" "pod_ips" {`) {
		t.Errorf("definition: %+v", res.Definition)
	}
	for _, w := range []string{"on_mismatch", "map_flags", "prune", "resync", "on_remove", "inputs"} {
		if !slices.Contains(res.Completion, w) {
			t.Errorf("completion lacks %q: %v", w, res.Completion)
		}
	}
	if slices.Contains(res.Completion, "pin") {
		t.Errorf("completion offers pin, which the block has: %v", res.Completion)
	}
	// object.metadata. offers the Pod's metadata fields but managedFields,
	// which the source's ignore_fields removes.
	if !slices.Contains(res.Fields, "name") || !slices.Contains(res.Fields, "labels") || slices.Contains(res.Fields, "managedFields") {
		t.Errorf("object.metadata. completes to %v", res.Fields)
	}
}

// nvimCompleteScript opens a file in Neovim's built-in LSP client, types
// a line before line L (0-based) once the first diagnostics came, and
// writes the labels the server completes at its end.
const nvimCompleteScript = `
local bin, file, out, L, typed = %q, %q, %q, %d, %q
local res = {}
local ok, err = pcall(function()
  local ready, diags = false, false
  local id = vim.lsp.start_client({
    cmd = { bin, "lsp", "--debounce", "50ms" },
    root_dir = vim.fn.fnamemodify(file, ":h"),
    flags = { debounce_text_changes = 0 },
    on_init = function() ready = true end,
    handlers = { ["textDocument/publishDiagnostics"] = function() diags = true end },
  })
  vim.cmd("edit " .. file)
  local buf = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(buf, id)
  if not vim.wait(20000, function() return ready and diags end, 10) then error("no first diagnostics") end
  vim.api.nvim_buf_set_lines(buf, L, L, false, { typed })
  local r = vim.lsp.buf_request_sync(buf, "textDocument/completion",
    { textDocument = { uri = vim.uri_from_bufnr(buf) }, position = { line = L, character = #typed } }, 10000)
  if not r or not r[id] then error("no answer to completion") end
  if r[id].err then error(vim.inspect(r[id].err)) end
  res.labels = {}
  for _, it in ipairs(r[id].result.items or r[id].result) do table.insert(res.labels, it.label) end
end)
res.err = ok and vim.NIL or tostring(err)
vim.fn.writefile({ vim.fn.json_encode(res) }, out)
vim.cmd("qa!")
`

// TestLSPNeovimFilesFields completes record.value. in Neovim, in the
// extract reading the CSV files source of examples/files-formats: the
// columns of the file on disk.
func TestLSPNeovimFilesFields(t *testing.T) {
	nvim, bin := nvimAndPipeline(t)
	main := filepath.Join(copyExample(t, "files-formats"), "main.hcl")
	tmp := t.TempDir()
	out, script := filepath.Join(tmp, "result.json"), filepath.Join(tmp, "test.lua")
	lua := fmt.Sprintf(nvimCompleteScript, bin, main, out, lineOf(t, readString(t, main), "  key   = record.key"), "  where = record.value.")
	if err := os.WriteFile(script, []byte(lua), 0o644); err != nil {
		t.Fatal(err)
	}
	runNvim(t, nvim, tmp, script)
	var res struct {
		Err    any      `json:"err"`
		Labels []string `json:"labels"`
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no result: %v", err)
	}
	if err := json.Unmarshal(b, &res); err != nil || res.Err != nil {
		t.Fatalf("script: %v %v: %s", err, res.Err, b)
	}
	slices.Sort(res.Labels)
	if !slices.Equal(res.Labels, []string{"ip", "name", "zone"}) {
		t.Errorf("record.value. completes to %v, want the CSV's columns ip, name, zone", res.Labels)
	}
}

// TestLSPNeovimConfigTestFile completes an expect's label in Neovim, in
// the config test file of examples/flagship: the configuration's sinks.
func TestLSPNeovimConfigTestFile(t *testing.T) {
	nvim, bin := nvimAndPipeline(t)
	file := filepath.Join(copyExample(t, "flagship"), "allowlist.test.hcl")
	tmp := t.TempDir()
	out, script := filepath.Join(tmp, "result.json"), filepath.Join(tmp, "test.lua")
	lua := fmt.Sprintf(nvimCompleteScript, bin, file, out, lineOf(t, readString(t, file), "  # Within the 100ms debounce interval"), `  expect "sink.`)
	if err := os.WriteFile(script, []byte(lua), 0o644); err != nil {
		t.Fatal(err)
	}
	runNvim(t, nvim, tmp, script)
	var res struct {
		Err    any      `json:"err"`
		Labels []string `json:"labels"`
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no result: %v", err)
	}
	if err := json.Unmarshal(b, &res); err != nil || res.Err != nil {
		t.Fatalf("script: %v %v: %s", err, res.Err, b)
	}
	slices.Sort(res.Labels)
	if want := []string{"sink.audit.trail", "sink.ebpf_map.allowed", "sink.nats.events"}; !slices.Equal(res.Labels, want) {
		t.Errorf(`expect "sink. completes to %v, want the flagship's sinks %v`, res.Labels, want)
	}
}
