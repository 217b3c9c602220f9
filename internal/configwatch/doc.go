// Package configwatch tells a running pipeline when its configuration files
// may have changed: it watches their directories with inotify (fsnotify),
// debounces bursts of events, and polls a content hash where inotify is
// unavailable or as a safety net. It decides nothing: the caller hashes the
// files, skips unchanged content and reloads (cmd/pipeline); the engine
// applies the new graph (engine.Runtime.Reload).
//
// Directories are watched rather than files, because editors and
// Kubernetes replace files: a rename-save, `sed -i` and the ConfigMap
// `..data` symlink swap all drop a watch on the file itself, and the
// ConfigMap swap names no configuration file at all in its events.
//
// Hub shares the process's one inotify instance among the watchers of
// data files (source "files"): Linux allows 128 instances per user, and a
// configuration may hold many more sources than that.
package configwatch
