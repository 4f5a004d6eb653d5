package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
)

// relSelfSigned writes a self-signed certificate for 127.0.0.1 and its key
// to dir and returns their paths and a pool that trusts the certificate.
func relSelfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "vllm-prober-test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile = testfile.Write(t, dir, "tls.crt", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	keyFile = testfile.Write(t, dir, "tls.key", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// relDo sends one request with client and returns the status and body.
func relDo(t *testing.T, client *http.Client, method, u string, auth bool) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth {
		req.SetBasicAuth("alice", "s3cret")
	}
	resp, b := daemontest.Send(t, client, req)
	return resp.StatusCode, string(b)
}

// TestWebConfigTLSAndBasicAuth: with --web.config.file (TLS and basic
// auth), every endpoint refuses requests without credentials, and plain
// HTTP is refused.
func TestWebConfigTLSAndBasicAuth(t *testing.T) {
	simURL := startSimulator(t)
	dir := t.TempDir()
	cfgPath := writeChatConfig(t, dir, simURL, 1, "")
	certFile, keyFile, pool := relSelfSigned(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webPath := testfile.Write(t, dir, "web.yml", "tls_server_config:\n  cert_file: "+certFile+"\n  key_file: "+keyFile+
		"\nbasic_auth_users:\n  alice: "+string(hash)+"\n")
	d := startDaemon(t, "--config.file="+cfgPath, "--web.config.file="+webPath, "--web.enable-lifecycle")
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	base := "https://" + d.Addr

	endpoints := []struct{ method, path string }{
		{http.MethodGet, "/metrics"}, {http.MethodGet, "/"}, {http.MethodGet, "/-/healthy"}, {http.MethodGet, "/-/ready"},
		{http.MethodGet, "/api/v1/results"}, {http.MethodGet, "/probe?target=sim&probe=chat"}, {http.MethodPost, "/-/reload"},
		{http.MethodGet, "/no-such-page"},
	}
	for _, ep := range endpoints {
		t.Run(ep.method+" "+ep.path, func(t *testing.T) {
			if code, _ := relDo(t, client, ep.method, base+ep.path, false); code != http.StatusUnauthorized {
				t.Errorf("without credentials: %d, want 401", code)
			}
			code, body := relDo(t, client, ep.method, base+ep.path, true)
			want := http.StatusOK
			if ep.path == "/no-such-page" {
				want = http.StatusNotFound
			}
			if code != want {
				t.Errorf("with credentials: %d, want %d: %.200s", code, want, body)
			}
		})
	}
	t.Run("plain HTTP", func(t *testing.T) {
		code, _ := get(t, http.MethodGet, "http://"+d.Addr+"/metrics", "alice", "s3cret")
		if code != http.StatusBadRequest {
			t.Errorf("plain HTTP to the TLS port: %d, want 400", code)
		}
	})
	t.Run("untrusted client", func(t *testing.T) {
		if _, err := http.Get(base + "/metrics"); err == nil {
			t.Error("a client that does not trust the certificate got an answer")
		}
	})
}

// TestRequestParametersBounded: /probe only runs configured pairs (a URL
// in a parameter never reaches the network), unknown and oversized names
// are refused with a bounded message, and limit is bounded.
func TestRequestParametersBounded(t *testing.T) {
	simURL := startSimulator(t)
	cfgPath := writeChatConfig(t, t.TempDir(), simURL, 1, "")
	d := startDaemon(t, "--config.file="+cfgPath)

	var hits atomic.Int64
	trap, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer trap.Close()
	go func() {
		for {
			c, err := trap.Accept()
			if err != nil {
				return
			}
			hits.Add(1)
			c.Close()
		}
	}()
	trapURL := "http://" + trap.Addr().String()
	long := strings.Repeat("x", 100000)
	tests := []struct {
		name, path string
		want       int
	}{
		{"probe: configured pair", "/probe?target=sim&probe=chat", 200},
		{"probe: URL as target", "/probe?target=" + url.QueryEscape(trapURL) + "&probe=chat", 400},
		{"probe: URL as probe", "/probe?target=sim&probe=" + url.QueryEscape(trapURL), 400},
		{"probe: module-style parameters ignored", "/probe?target=sim&probe=chat&url=" + url.QueryEscape(trapURL) + "&module=" + url.QueryEscape(trapURL), 200},
		{"probe: missing probe", "/probe?target=sim", 400},
		{"probe: huge target name", "/probe?target=" + long + "&probe=chat", 400},
		{"results: unknown target", "/api/v1/results?target=nope", 400},
		{"results: huge probe name", "/api/v1/results?probe=" + long, 400},
		{"results: limit 0", "/api/v1/results?limit=0", 400},
		{"results: negative limit", "/api/v1/results?limit=-1", 400},
		{"results: limit above 1000", "/api/v1/results?limit=1001", 400},
		{"results: limit overflows", "/api/v1/results?limit=99999999999999999999", 400},
		{"results: limit not a number", "/api/v1/results?limit=1e3", 400},
		{"results: limit 1000", "/api/v1/results?limit=1000", 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, http.MethodGet, d.URL(tc.path))
			if code != tc.want {
				t.Errorf("%d, want %d: %.200s", code, tc.want, body)
			}
			if len(body) > 64<<10 {
				t.Errorf("answer of %d bytes echoes the input", len(body))
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("a URL given as a parameter was connected to %d times", n)
	}
}

// TestStatusPageEscapesServerText: text a server sends back (its error
// message) is shown escaped on the status page, never as markup.
func TestStatusPageEscapesServerText(t *testing.T) {
	const script = `<script>alert("x")</script>`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"error":{"message":"` + strings.ReplaceAll(script, `"`, `\"`) + `","type":"InternalServerError","code":500}}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	cfgPath := testfile.Write(t, dir, "c.yml", `targets:
  - name: evil
    url: `+srv.URL+`
    model: m
    metrics_path: ""
probes:
  - name: chat
    api: chat
    rate: 20
    workload: {random: {input_tokens: 8, output_tokens: 8}}
`)
	d := startDaemon(t, "--config.file="+cfgPath)
	var page string
	waitFor(t, "the failure on the status page", func() bool {
		_, page = get(t, http.MethodGet, d.URL("/"))
		return strings.Contains(page, "alert(")
	})
	if strings.Contains(page, script) {
		t.Errorf("the status page renders the server's text as markup")
	}
	if !strings.Contains(page, "&lt;script&gt;") {
		t.Errorf("the status page does not show the server's text escaped")
	}
}
