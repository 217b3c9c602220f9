package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pipeline/pipeline/engine/graph"
)

// The fingerprints a running instance serves on GET /graph digest the
// parts of its nodes that hold a secret with a key drawn when it started
// (graph.FingerprintKey), so nobody can use them to guess the secret. For
// `pipeline plan --against` to compare those nodes, run writes the key to
// a file only its user can read and names the file in /graph; a plan on
// the same machine, run by that user, reads it. A plan that cannot read it
// shows such nodes as rebuilt and says why.

// writeFingerprintKey writes this process's fingerprint key into dir
// ($XDG_RUNTIME_DIR, else the temporary directory, when dir is empty) and
// returns the file's path and a function that removes it.
func writeFingerprintKey(dir string) (string, func(), error) {
	if dir == "" {
		dir = os.Getenv("XDG_RUNTIME_DIR")
	}
	if dir == "" {
		dir = os.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("pipeline-%d.fingerprint-key", os.Getpid()))
	// A file left by an earlier process with this pid (or planted there) is
	// replaced, never written through.
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", nil, fmt.Errorf("fingerprint key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", nil, fmt.Errorf("fingerprint key: %w", err)
	}
	_, err = f.Write(graph.FingerprintKey())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return "", nil, fmt.Errorf("fingerprint key: %w", err)
	}
	return path, func() { _ = os.Remove(path) }, nil
}

// useInstanceKey makes this process fingerprint with the key of the
// instance whose graph is st. It returns why not when it cannot.
func useInstanceKey(st graph.GraphState) error {
	if st.FingerprintKeyFile == "" {
		return errors.New("the instance names no fingerprint key file")
	}
	f, err := os.Open(st.FingerprintKeyFile)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", st.FingerprintKeyFile)
	}
	k, err := io.ReadAll(io.LimitReader(f, graph.FingerprintKeySize+1))
	if err != nil {
		return err
	}
	if err := graph.UseFingerprintKey(k); err != nil {
		return fmt.Errorf("%s: %w", st.FingerprintKeyFile, err)
	}
	return nil
}
