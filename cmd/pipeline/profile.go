package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

// startProfiles starts the profiles a developer asked for in the
// environment and returns what writes them when the command ends:
// PIPELINE_CPUPROFILE=FILE profiles the CPU from start to exit,
// PIPELINE_MEMPROFILE=FILE writes the live heap (after a GC) at exit, or
// PIPELINE_MEMPROFILE_AFTER (a duration) after start: by exit a run has
// stopped its nodes and holds little.
// `make bench BENCHFLAGS=-profile DIR` sets both for every pipeline run
// it measures. Profiles are read with `go tool pprof`.
func startProfiles(stderr io.Writer) func() {
	cpuPath, memPath := os.Getenv("PIPELINE_CPUPROFILE"), os.Getenv("PIPELINE_MEMPROFILE")
	if cpuPath == "" && memPath == "" {
		return func() {}
	}
	var cpu *os.File
	if cpuPath != "" {
		f, err := os.Create(cpuPath)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "Warning: CPU profile: %s\n", err)
		} else {
			cpu = f
		}
	}
	after, _ := time.ParseDuration(os.Getenv("PIPELINE_MEMPROFILE_AFTER"))
	var timer *time.Timer
	if memPath != "" && after > 0 {
		timer = time.AfterFunc(after, func() {
			if err := writeHeapProfile(memPath); err != nil {
				fmt.Fprintf(stderr, "Warning: heap profile: %s\n", err)
			}
		})
	}
	return func() {
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				fmt.Fprintf(stderr, "Warning: CPU profile: %s\n", err)
			}
		}
		if memPath != "" && (timer == nil || timer.Stop()) {
			if err := writeHeapProfile(memPath); err != nil {
				fmt.Fprintf(stderr, "Warning: heap profile: %s\n", err)
			}
		}
	}
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
