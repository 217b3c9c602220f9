// Package haproxy changes a running HAProxy through its runtime API
// instead of reloading it, when a new haproxy.cfg differs from the running
// one only in what the runtime API can set: a server's address, port,
// weight or state, and servers added to or removed from an existing
// backend.
//
// Parse reads just enough of haproxy.cfg to find its sections and each
// backend's server lines; Diff compares two files and returns either the
// runtime operations that turn the first into the second or the reason a
// reload is needed; Client tells whether HAProxy runs a file (Check),
// sends operations over the stats socket (Apply) and reads back what
// HAProxy then holds (Verify). Anything Diff cannot prove
// equivalent, and any error, mismatch or timeout of Apply or Verify, is the
// caller's cue to check, swap and reload as it would without this package.
//
// Not here: rendering, checking and swapping the file and signalling
// HAProxy's master, which sinks/template does; this package imports
// nothing of ours.
package haproxy
