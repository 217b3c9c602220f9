// Package atomicfile replaces a file atomically: a temporary file in the
// same directory is written, synced, renamed over the file, and the
// directory is synced, so a reader sees the old bytes or the new ones and
// a crash leaves one of them. It is the one atomic write of pipeline (the
// template sink's file and backup, the audit trail's checkpoint). It is
// not for append-only files (sinks/audit keeps its own trail) nor for
// reading; sinks read their files themselves.
package atomicfile
