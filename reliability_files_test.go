package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/probe/ledger/ledgertest"
)

// replaceFile swaps path for a FIFO or a symlink to /dev/zero.
func replaceFile(t *testing.T, path, kind string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	var err error
	if kind == "fifo" {
		err = syscall.Mkfifo(path, 0o600)
	} else {
		err = os.Symlink("/dev/zero", path)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// runBounded is runBinary for a command that might hang: it is killed
// after 30 seconds (exit code -1).
func runBounded(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	case err != nil:
		t.Fatalf("run %v: %v", args, err)
	}
	return 0, string(out)
}

// sighup sends SIGHUP to the daemon.
func sighup(t *testing.T, d *daemontest.Proc) {
	t.Helper()
	if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
}

// TestHostileConfigFile swaps the config file of a running daemon for a
// FIFO and for a symlink to /dev/zero: each SIGHUP fails with a message
// naming the file instead of hanging the signal loop or reading without
// bound, --config.check says the same, and SIGTERM right after a SIGHUP
// still stops the process.
func TestHostileConfigFile(t *testing.T) {
	simURL := startSimulator(t)
	dir := t.TempDir()
	cfgPath := writeChatConfig(t, dir, simURL, 2, "")
	d := startDaemon(t, "--config.file="+cfgPath)

	for _, tc := range []struct{ kind, want string }{
		{"fifo", "c.yml: not a regular file (a FIFO)"},
		{"zero", "c.yml: not a regular file (a character device)"},
	} {
		replaceFile(t, cfgPath, tc.kind)
		code, out := runBounded(t, "--config.file="+cfgPath, "--config.check")
		if code != 1 || !strings.Contains(out, tc.want) {
			t.Errorf("--config.check of a %s: exit %d, want 1 and %q:\n%s", tc.kind, code, tc.want, out)
		}
		before := strings.Count(d.Logs(), "Error reloading config")
		sighup(t, d)
		waitFor(t, "the reload of a "+tc.kind+" to fail", func() bool {
			return strings.Count(d.Logs(), "Error reloading config") > before
		})
		if logs := d.Logs(); !strings.Contains(logs, tc.want) {
			t.Errorf("reload error does not say %q:\n%s", tc.want, logs)
		}
		if !metricsContain(t, d, "vllm_prober_config_last_reload_successful 0") {
			t.Errorf("failed reload of a %s not shown in the metrics", tc.kind)
		}
	}

	replaceFile(t, cfgPath, "fifo")
	sighup(t, d)
	if err := d.Stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("daemon exit after SIGHUP then SIGTERM: %v", err)
	}
}

// TestURLSecretsNotEchoed writes a token as a target URL's user name and
// an API key as its query: --config.check and a failed reload's log name
// the problem without showing either.
func TestURLSecretsNotEchoed(t *testing.T) {
	const token, key = "sk-USERINFO-4f2a9c", "QUERYKEY-77b1e0"
	simURL := startSimulator(t)
	dir := t.TempDir()
	cfgPath := writeChatConfig(t, dir, simURL, 2, "")
	d := startDaemon(t, "--config.file="+cfgPath, "--log.level=debug")

	bad := strings.Replace(simURL, "http://", "http://"+token+"@", 1) + "/?api_key=" + key
	writeConfig(t, cfgPath, bad, 2, "")
	code, out := runBinary(t, "--config.file="+cfgPath, "--config.check")
	if code != 1 || !strings.Contains(out, "targets[0].url: must not contain credentials") {
		t.Errorf("--config.check: exit %d, want 1 naming the URL:\n%s", code, out)
	}
	sighup(t, d)
	waitFor(t, "the reload to fail", func() bool { return strings.Contains(d.Logs(), "Error reloading config") })
	_, status := get(t, http.MethodGet, d.URL("/"))
	for where, text := range map[string]string{"--config.check": out, "logs": d.Logs(), "status page": status} {
		for _, secret := range []string{token, key} {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows %s:\n%s", where, secret, text)
			}
		}
	}
	if !regexp.MustCompile(`http://xxxxx@127\.0\.0\.1:\d+/\?api_key=xxxxx`).MatchString(d.Logs()) {
		t.Errorf("reload error does not show the redacted URL:\n%s", d.Logs())
	}
}

// TestUnchangedReloadLogsAtDebug reloads an unchanged config at the
// default log level: nothing is logged for it.
func TestUnchangedReloadLogsAtDebug(t *testing.T) {
	simURL := startSimulator(t)
	cfgPath := writeChatConfig(t, t.TempDir(), simURL, 2, "")
	d := startDaemon(t, "--config.file="+cfgPath, "--web.enable-lifecycle")
	for range 3 {
		if code, body := get(t, http.MethodPost, d.URL("/-/reload")); code != http.StatusOK {
			t.Fatalf("reload: %d %s", code, body)
		}
	}
	// A failed reload logs after them, so their lines would be read by now.
	if err := os.WriteFile(cfgPath, []byte("nonsense: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, http.MethodPost, d.URL("/-/reload")); code != http.StatusInternalServerError {
		t.Fatalf("reload of a bad config: %d, want 500", code)
	}
	waitFor(t, "the failed reload's log", func() bool { return strings.Contains(d.Logs(), "Error reloading config") })
	if logs := d.Logs(); strings.Contains(logs, "Config unchanged") {
		t.Errorf("unchanged reloads logged at info:\n%s", logs)
	}
}

// TestLedgerDirectoryDeletedWhileRunning deletes the ledger's directory
// under a running daemon: later records land in the file made again, no
// write error is counted (none was lost) and the status page says the file
// was reopened.
func TestLedgerDirectoryDeletedWhileRunning(t *testing.T) {
	simURL := startSimulator(t)
	dir := t.TempDir()
	ledgerDir := filepath.Join(dir, "ledger")
	ledger := filepath.Join(ledgerDir, "ledger.jsonl")
	cfgPath := writeChatConfig(t, dir, simURL, 10, ledger)
	d := startDaemon(t, "--config.file="+cfgPath)
	waitFor(t, "records in the ledger", func() bool {
		b, err := os.ReadFile(ledger)
		return err == nil && len(b) > 0
	})
	if err := os.RemoveAll(ledgerDir); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "records in the recreated ledger", func() bool {
		b, err := os.ReadFile(ledger)
		return err == nil && strings.Count(string(b), "\n") >= 3
	})
	_, page := get(t, http.MethodGet, d.URL("/"))
	if !strings.Contains(page, "write errors: 0 · file deleted or replaced and reopened 1 times") {
		t.Errorf("status page does not show the reopened ledger:\n%s", page)
	}
	if !metricsContain(t, d, "vllm_prober_ledger_write_errors_total 0") {
		t.Error("write errors counted though no record was lost")
	}
	if logs := d.Logs(); !strings.Contains(logs, "ledger file vanished or was replaced") {
		t.Errorf("reopening not logged:\n%s", logs)
	}
}

// TestLedgerRunIDSeparatesRestarts runs the daemon twice on one ledger:
// each run's records carry the run_id it logged at start, and within a
// run_id every pair's seq counts from 1 without gaps, which is how a
// reader tells a restart from lost records.
func TestLedgerRunIDSeparatesRestarts(t *testing.T) {
	simURL := startSimulator(t)
	dir := t.TempDir()
	ledgerPath := filepath.Join(dir, "ledger.jsonl")
	cfgPath := writeChatConfig(t, dir, simURL, 10, ledgerPath)
	runIDRE := regexp.MustCompile(`msg="Probing started".* run_id=([0-9a-f]{16})`)
	var logged []string
	for range 2 {
		d := startDaemon(t, "--config.file="+cfgPath)
		var id string
		waitFor(t, "the run_id logged at start", func() bool {
			m := runIDRE.FindStringSubmatch(d.Logs())
			if m != nil {
				id = m[1]
			}
			return m != nil
		})
		waitFor(t, "records of this run", func() bool {
			recs, _, err := ledger.Read(ledgerPath)
			n := 0
			for _, r := range recs {
				if r.RunID == id {
					n++
				}
			}
			return err == nil && n >= 3
		})
		stopDaemon(t, d)
		logged = append(logged, id)
	}
	if logged[0] == logged[1] {
		t.Fatalf("both runs logged run_id %s", logged[0])
	}
	recs := ledgertest.Read(t, ledgerPath)
	seqs := map[string][]uint64{}
	for _, r := range recs {
		seqs[r.RunID] = append(seqs[r.RunID], r.Seq)
	}
	if len(seqs) != 2 || len(seqs[logged[0]]) == 0 || len(seqs[logged[1]]) == 0 {
		t.Fatalf("records by run_id %v, want those of the logged %v", seqs, logged)
	}
	for id, s := range seqs {
		slices.Sort(s)
		for i, seq := range s {
			if seq != uint64(i+1) {
				t.Errorf("run %s: seqs %v, want 1..%d", id, s, len(s))
				break
			}
		}
	}
}

// TestRedirectedURLSecretsNotShown runs the daemon against a server that
// redirects every request to a URL with a token as its user name and a key
// in its query: the ledger, the status page, /api/v1/results and the logs
// show neither, whether or not the redirect is followed.
func TestRedirectedURLSecretsNotShown(t *testing.T) {
	const token, key = "sk-REDIRUSER-81c3", "REDIRQUERY-5d0e"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+token+"@127.0.0.1:1/x?key="+key, http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger.jsonl")
	cfgPath := filepath.Join(dir, "c.yml")
	writeConfig(t, cfgPath, srv.URL, 10, ledger)
	d := startDaemon(t, "--config.file="+cfgPath, "--log.level=debug")
	waitFor(t, "failed requests in the ledger and a failed scrape", func() bool {
		b, _ := os.ReadFile(ledger)
		_, page := get(t, http.MethodGet, d.URL("/"))
		return strings.Contains(string(b), `"disposition":"server_failure"`) && strings.Contains(page, "failing")
	})
	shown := map[string]string{}
	_, shown["status page"] = get(t, http.MethodGet, d.URL("/"))
	_, shown["/api/v1/results"] = get(t, http.MethodGet, d.URL("/api/v1/results?limit=1000"))
	stopDaemon(t, d)
	b, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatal(err)
	}
	shown["ledger"], shown["logs"] = string(b), d.Logs()
	for where, text := range shown {
		for _, secret := range []string{token, key} {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows %s:\n%s", where, secret, text)
			}
		}
	}
}
