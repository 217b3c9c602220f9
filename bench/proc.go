package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
)

// proc is a child process under measurement.
type proc struct {
	cmd   *exec.Cmd
	done  chan struct{}
	start time.Time
	log   string
}

// startProc runs bin with args, its output in a log file of the scratch
// directory. start is taken just before the fork.
func (e *Env) startProc(name, bin string, args ...string) (*proc, error) {
	return e.startProcEnv(name, bin, nil, args...)
}

// startProcEnv is startProc with env added to the benchmark's environment.
func (e *Env) startProcEnv(name, bin string, env []string, args ...string) (*proc, error) {
	if err := e.scratch(); err != nil {
		return nil, err
	}
	logPath := filepath.Join(e.dir, name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	if e.opts.Profile != "" && (bin == e.opts.Pipeline || bin == e.contender("agents")) {
		e.profiles++
		base := filepath.Join(e.opts.Profile, fmt.Sprintf("%s-%d", name, e.profiles))
		cmd.Env = append(append(os.Environ(), env...), "PIPELINE_CPUPROFILE="+base+".cpu.pprof", "PIPELINE_MEMPROFILE="+base+".heap.pprof",
			"PIPELINE_MEMPROFILE_AFTER="+e.opts.ProfileHeapAfter.String())
	}
	p := &proc{cmd: cmd, done: make(chan struct{}), log: logPath}
	p.start = time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { _ = cmd.Wait(); logf.Close(); close(p.done) }()
	return p, nil
}

// stop ends the process (SIGTERM, then SIGKILL after 10 s) and waits for it.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// exited returns an error with the log's tail if the process has ended.
func (p *proc) exited() error {
	select {
	case <-p.done:
		b, _ := os.ReadFile(p.log)
		s := strings.TrimSpace(string(b))
		if len(s) > 600 {
			s = s[len(s)-600:]
		}
		return fmt.Errorf("%s exited (%s): %s", filepath.Base(p.cmd.Path), p.cmd.ProcessState, s)
	default:
		return nil
	}
}

// rssMB reads a field of /proc/PID/status (VmRSS, VmHWM) in MB.
func rssMB(pid int, field string) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == field+":" {
			kb, err := strconv.ParseFloat(f[1], 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// cpuMillis returns the processor time (user and system, all threads)
// process pid has used so far, from /proc/pid/stat, in clock ticks of
// 10 ms.
func cpuMillis(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after its
	// closing parenthesis start at field 3 (state), so utime and stime
	// (fields 14 and 15) are at 11 and 12.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, b)
	}
	var ticks float64
	for _, x := range f[11:13] {
		n, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return ticks * 10, nil // USER_HZ is 100 on Linux
}

// waitFull polls the pinned map until it holds want entries and returns
// when it saw that. Each poll first looks up a few sample keys (cheap);
// only when all are present does it count the entries with batch lookups,
// so the poller costs little CPU while the process under test works. The
// time is the end of the successful count: late by one poll at most
// (~1 ms per 10,000 entries counted).
func waitFull(ctx context.Context, p *proc, pin string, want int, samples [][4]byte, limit time.Duration) (time.Time, error) {
	deadline := time.Now().Add(limit)
	var m *ebpf.Map
	defer func() {
		if m != nil {
			m.Close()
		}
	}()
	var v uint32
	for {
		if m == nil {
			if mm, err := ebpf.LoadPinnedMap(pin, &ebpf.LoadPinOptions{ReadOnly: true}); err == nil {
				m = mm
			}
		}
		if m != nil && present(m, samples, &v) {
			n, err := count(m)
			if err != nil {
				return time.Time{}, err
			}
			if n >= want {
				return time.Now(), nil
			}
		}
		if err := p.exited(); err != nil {
			return time.Time{}, err
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("map %s not full after %s", pin, limit)
		}
		if err := ctx.Err(); err != nil {
			return time.Time{}, err
		}
		time.Sleep(500 * time.Microsecond)
	}
}

func present(m *ebpf.Map, keys [][4]byte, v *uint32) bool {
	for i := range keys {
		if m.Lookup(&keys[i], v) != nil {
			return false
		}
	}
	return true
}

// count counts a map's entries with batch lookups of 8,192.
func count(m *ebpf.Map) (int, error) {
	const chunk = 8192
	keys, vals := make([][4]byte, chunk), make([]uint32, chunk)
	var cur ebpf.MapBatchCursor
	total := 0
	for {
		n, err := m.BatchLookup(&cur, keys, vals, nil)
		total += n
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return total, nil
		}
		if err != nil {
			return total, fmt.Errorf("count entries: %w", err)
		}
	}
}

// samples picks k spread keys of the first n pod IPs, the last included.
func samples(n, k int) [][4]byte {
	out := make([][4]byte, 0, k)
	for j := range k {
		out = append(out, podIP((n-1)*(k-j)/k))
	}
	return out
}

func errorsIsKeyNotExist(err error) bool { return errors.Is(err, ebpf.ErrKeyNotExist) }
