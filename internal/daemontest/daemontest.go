// Package daemontest builds the vllm-prober binary and runs it as a user
// would, for the tests of the main package and the end-to-end tests, and
// holds the helpers every test that waits on a server shares: polling for
// a state, a free loopback address and a log buffer safe to share.
package daemontest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Build compiles the module's main package (at dir) into a temporary
// directory and returns the binary's path and a cleanup function. It is
// meant for TestMain.
func Build(dir string) (binary string, cleanup func(), err error) {
	tmp, err := os.MkdirTemp("", "vllm-prober-test-")
	if err != nil {
		return "", nil, err
	}
	binary = filepath.Join(tmp, "vllm-prober")
	cmd := exec.Command("go", "build", "-o", binary, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		return "", nil, fmt.Errorf("go build: %w\n%s", err, out)
	}
	return binary, func() { os.RemoveAll(tmp) }, nil
}

// Main builds the binary from the main package at dir into *binary, runs
// the tests and cleans up; TestMain passes its result to os.Exit.
func Main(m *testing.M, dir string, binary *string) int {
	bin, cleanup, err := Build(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cleanup()
	*binary = bin
	return m.Run()
}

// RequireTool returns the path of a program the tests need (promtool,
// prometheus, alertmanager, amtool, chromium) and fails the test when it
// is not on PATH: .ci/run installs them, so a missing one is a broken
// environment, not a reason to skip.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found on PATH: install it (apt-get install -y --no-install-recommends prometheus prometheus-alertmanager chromium, see .ci/run): %v", name, err)
	}
	return p
}

// Run runs the binary to completion and returns its exit code and combined
// output.
func Run(t testing.TB, binary string, args ...string) (int, string) {
	t.Helper()
	code, out, err := Output(exec.Command(binary, args...))
	if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return code, out
}

// Output runs cmd to completion and returns its exit code and combined
// output; err is set only when cmd could not run. It needs no test, so a
// goroutine may call it.
func Output(cmd *exec.Cmd) (int, string, error) {
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out), nil
	}
	return 0, string(out), err
}

// Proc is a running daemon.
type Proc struct {
	Cmd  *exec.Cmd
	Addr string
	Done chan struct{} // closed when stderr ends
	logs SyncBuffer
}

var listeningRE = regexp.MustCompile(`msg=Listening address=(\S+)`)

// Start runs the binary with args plus a loopback listen address and waits
// until it logs where it listens. The process is killed at cleanup.
func Start(t testing.TB, binary string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Cmd: exec.Command(binary, append([]string{"--web.listen-address=127.0.0.1:0"}, args...)...), Done: make(chan struct{})}
	stderr, err := p.Cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrCh := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(&p.logs, line)
			if m := listeningRE.FindStringSubmatch(line); m != nil {
				select {
				case addrCh <- m[1]:
				default:
				}
			}
		}
		close(p.Done)
	}()
	t.Cleanup(func() {
		_ = p.Cmd.Process.Kill()
		<-p.Done
		_ = p.Cmd.Wait()
	})
	select {
	case p.Addr = <-addrCh:
	case <-time.After(30 * time.Second):
		t.Fatalf("daemon did not listen; logs:\n%s", p.Logs())
	}
	return p
}

// StartDemo runs `binary demo` with args on a loopback listen address
// until the test ends, and reads its standard output up to the line that
// names its config. It returns the metrics URL, the output read so far and
// the scanner of the rest, which the caller must keep draining so the demo
// never blocks on a full pipe. When the test ends it stops the demo and
// removes the directory the demo kept (RemoveDemoDir).
func StartDemo(t testing.TB, binary string, args ...string) (metricsURL, head string, stdout *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"demo", "--web.listen-address=127.0.0.1:0"}, args...)...)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var dir string
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if dir != "" {
			removeDemoDir(t, dir)
		}
	})
	sc := bufio.NewScanner(pipe)
	var out strings.Builder
	for dir == "" && sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		switch f := strings.Fields(sc.Text()); {
		case len(f) == 2 && f[0] == "metrics:":
			metricsURL = f[1]
		case len(f) == 2 && f[0] == "config:":
			dir = filepath.Dir(f[1])
		}
	}
	if metricsURL == "" || dir == "" {
		t.Fatalf("demo printed no metrics URL or no config path:\n%s", out.String())
	}
	return metricsURL, out.String(), sc
}

// RemoveDemoDir removes, when the test ends, dir: the directory a demo
// created and kept after it exited. The test fails if dir is not there.
func RemoveDemoDir(t testing.TB, dir string) {
	t.Cleanup(func() { removeDemoDir(t, dir) })
}

func removeDemoDir(t testing.TB, dir string) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || !strings.HasPrefix(filepath.Base(dir), "vllm-prober-demo-") {
		t.Errorf("the demo's directory %q is not there to remove (stat: %v)", dir, err)
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Errorf("remove the demo's directory: %v", err)
	}
}

// Stop sends sig to the daemon, waits until it exits and returns the error
// of its exit (nil for status 0). A daemon still running 30 seconds after
// the signal fails the test with its logs.
func (p *Proc) Stop(t testing.TB, sig os.Signal) error {
	t.Helper()
	if err := p.Cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done:
	case <-time.After(30 * time.Second):
		t.Fatalf("daemon did not stop after %v; logs:\n%s", sig, p.Logs())
	}
	return p.Cmd.Wait()
}

// Logs returns what the daemon logged so far.
func (p *Proc) Logs() string {
	return p.logs.String()
}

// URL returns the daemon's URL for path.
func (p *Proc) URL(path string) string { return "http://" + p.Addr + path }

// Do sends a request and returns status and body; auth, when given, is
// user and password for basic auth.
func Do(t testing.TB, method, url string, auth ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(auth) == 2 {
		req.SetBasicAuth(auth[0], auth[1])
	}
	resp, b := Send(t, http.DefaultClient, req)
	return resp.StatusCode, string(b)
}

// Send sends req with client and returns the response with its whole
// body, already closed. It ends the test when no response comes or the
// body cannot be read.
func Send(t testing.TB, client *http.Client, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", req.Method, req.URL, err)
	}
	return resp, b
}

// WaitFor polls cond every 100ms until it holds or timeout passes.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	Poll(t, timeout, 100*time.Millisecond, what, cond)
}

// Poll checks cond every interval until it holds, and ends the test when
// timeout passes first; what names the awaited state in that message.
func Poll(t testing.TB, timeout, every time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(every)
	}
	t.Fatalf("timed out after %s waiting for %s", timeout, what)
}

// SyncBuffer collects what a process or a logger writes while a test reads
// it: Write, String and Tail may be called from different goroutines.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Tail returns the last n bytes written, after "...\n" when earlier ones
// are left out.
func (s *SyncBuffer) Tail(n int) string {
	out := s.String()
	if len(out) > n {
		out = "...\n" + out[len(out)-n:]
	}
	return out
}
