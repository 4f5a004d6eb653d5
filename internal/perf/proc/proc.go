// Package proc starts the perf harness's child processes (the simulator,
// the daemon, bench workers, the naive client), waits for the log line
// that says where each listens, and reads a process's CPU time, context
// switches and memory from /proc.
package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Log lines that tell where a started process listens: the simulator's
// and the daemon's (the address is the first group).
var (
	SimulatorReady = regexp.MustCompile(`msg="?simulator ready"? url=http://(\S+)`)
	DaemonReady    = regexp.MustCompile(`msg=Listening address=(\S+)`)
)

// Process is a started child process, listening at Addr.
type Process struct {
	cmd  *exec.Cmd
	Addr string
	done chan struct{}
}

// Start runs binary with args and waits until its log matches ready,
// whose first group is the address it listens on.
func Start(ctx context.Context, binary string, ready *regexp.Regexp, args ...string) (*Process, error) {
	return StartCommand(exec.CommandContext(ctx, binary, args...), ready)
}

// StartCommand starts cmd and waits until its log matches ready.
func StartCommand(cmd *exec.Cmd, ready *regexp.Regexp) (*Process, error) {
	// what names the process in errors: the binary and its subcommand.
	what := strings.Join(cmd.Args[:min(len(cmd.Args), 2)], " ")
	p := &Process{cmd: cmd, done: make(chan struct{})}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", what, err)
	}
	found := make(chan string, 1)
	var logs strings.Builder
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if logs.Len() < 1<<16 {
				logs.WriteString(sc.Text() + "\n")
			}
			if m := ready.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case p.Addr = <-found:
		return p, nil
	case <-p.done:
		_ = p.cmd.Wait()
		return nil, fmt.Errorf("%s exited before listening: %s", what, logs.String())
	case <-time.After(20 * time.Second):
		p.Stop()
		return nil, fmt.Errorf("%s did not listen within 20s", what)
	}
}

// PID is the process's ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Stop terminates the process and waits for it.
func (p *Process) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	_ = p.cmd.Wait()
}

// Sample is one reading of a process's resource use.
type Sample struct {
	CPU          time.Duration // sum of the threads' on-CPU time (schedstat)
	Ticks        time.Duration // utime + stime
	RSS, PeakRSS int64
	// Context switches summed over the threads: voluntary ones are the
	// times a thread went to sleep (each one a later wake-up), whatever
	// the load; involuntary ones are preemptions and grow with the load.
	Voluntary, Involuntary int64
}

// clockTick is USER_HZ, 100 on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// Read reads /proc/pid.
func Read(pid int) (Sample, error) {
	var s Sample
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	tasks, err := os.ReadDir(filepath.Join(dir, "task"))
	if err != nil {
		return s, fmt.Errorf("read threads: %w", err)
	}
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, "task", t.Name(), "schedstat"))
		if err != nil {
			continue // the thread ended
		}
		ns, err := parseSchedstat(string(b))
		if err != nil {
			return s, err
		}
		s.CPU += ns
		if st, err := os.ReadFile(filepath.Join(dir, "task", t.Name(), "status")); err == nil {
			s.Voluntary += parseStatusInt(string(st), "voluntary_ctxt_switches:")
			s.Involuntary += parseStatusInt(string(st), "nonvoluntary_ctxt_switches:")
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return s, fmt.Errorf("read stat: %w", err)
	}
	if s.Ticks, err = parseStatCPU(string(b)); err != nil {
		return s, err
	}
	b, err = os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return s, fmt.Errorf("read status: %w", err)
	}
	s.RSS, s.PeakRSS = parseStatusKB(string(b), "VmRSS:"), parseStatusKB(string(b), "VmHWM:")
	return s, nil
}

// parseSchedstat returns the first field of /proc/.../schedstat: time
// spent on the CPU in nanoseconds.
func parseSchedstat(s string) (time.Duration, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0, errors.New("empty schedstat")
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse schedstat %q: %w", s, err)
	}
	return time.Duration(ns), nil
}

// parseStatCPU returns utime + stime of /proc/PID/stat (fields 14 and 15;
// the command name in parentheses may hold spaces).
func parseStatCPU(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse stat %q: no command name", s)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state), so utime (14) is f[11] and stime f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("parse stat: %d fields", len(f)+2)
	}
	var total int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse stat: %w", err)
		}
		total += n
	}
	return time.Duration(total) * clockTick, nil
}

// parseStatusKB returns the value of a "Key:  123 kB" line in bytes, or 0.
func parseStatusKB(status, key string) int64 {
	return parseStatusInt(status, key) << 10
}

// parseStatusInt returns the number after key in /proc/.../status, 0 when
// the key is missing.
func parseStatusInt(status, key string) int64 {
	for line := range strings.Lines(status) {
		if rest, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}
