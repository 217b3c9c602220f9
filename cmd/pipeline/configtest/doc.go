// Package configtest is the language of config tests (NAME.test.hcl files
// beside a configuration) and their runner, `pipeline test`. A test is a
// timeline: given blocks feed a source at a virtual time, expect blocks
// check what a sink's target holds or wrote at a virtual time.
//
// The blocks are declared once, as schema blocks (FileBlock): the decoder
// reads through them, and `pipeline schema`, the reference docs and the
// language server describe and complete *.test.hcl files from them. A
// test runs on the engine's sandbox (engine.Sandbox: real transforms and
// sink encodings, virtual time, sinks writing into memory); the command
// hands in its loader (Load), so the configuration is read exactly as
// validate and run read it.
//
// It does not load or compile configurations itself (cmd/pipeline's
// loader does, with the registry of node types), nor does it know any
// node type: it only addresses sources and sinks by their addresses.
package configtest
