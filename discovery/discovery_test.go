package discovery

import (
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
)

var discard = slog.New(slog.DiscardHandler)

func TestNewRefusesInvalidConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		want string
	}{
		{"none", Config{}, "discovery: set exactly one of dns, file_sd and http_sd (0 set)"},
		{"two", Config{DNS: &DNSConfig{Names: []string{"a"}, Port: 1}, FileSD: &FileSDConfig{Files: []string{"a.json"}}},
			"discovery: set exactly one of dns, file_sd and http_sd (2 set)"},
		{"dns without names", Config{DNS: &DNSConfig{Port: 8000}}, "discovery.dns.names: at least one name is required"},
		{"dns empty name", Config{DNS: &DNSConfig{Names: []string{"a", ""}, Port: 8000}},
			`discovery.dns.names[1]: "": not a domain name (1 to 253 characters)`},
		{"dns name with a space", Config{DNS: &DNSConfig{Names: []string{"vllm svc"}, Port: 8000}},
			`discovery.dns.names[0]: "vllm svc": not a domain name (character ' ')`},
		{"dns name with an empty label", Config{DNS: &DNSConfig{Names: []string{"vllm..svc."}, Port: 8000}},
			`discovery.dns.names[0]: "vllm..svc.": not a domain name (empty label or one longer than 63 characters)`},
		{"dns name not ASCII", Config{DNS: &DNSConfig{Names: []string{"vllm.évry.test"}, Port: 8000}},
			`discovery.dns.names[0]: "vllm.évry.test": not a domain name (character 'é')`},
		{"dns URL as name", Config{DNS: &DNSConfig{Names: []string{"http://vllm"}, Port: 8000}},
			`discovery.dns.names[0]: "http://vllm": not a domain name (character ':')`},
		{"dns bad type", Config{DNS: &DNSConfig{Names: []string{"a"}, Type: "MX"}}, `discovery.dns.type: "MX" is not one of A, AAAA and SRV`},
		{"dns A without port", Config{DNS: &DNSConfig{Names: []string{"a"}}},
			"discovery.dns.port: 0 is not a port from 1 to 65535 (type A records carry no port)"},
		{"dns AAAA port too large", Config{DNS: &DNSConfig{Names: []string{"a"}, Type: "AAAA", Port: 65536}},
			"discovery.dns.port: 65536 is not a port from 1 to 65535 (type AAAA records carry no port)"},
		{"dns SRV with port", Config{DNS: &DNSConfig{Names: []string{"a"}, Type: "SRV", Port: 80}},
			"discovery.dns.port: not used with type SRV, whose records carry their own ports"},
		{"file_sd without files", Config{FileSD: &FileSDConfig{}}, "discovery.file_sd.files: at least one file or glob is required"},
		{"file_sd bad extension", Config{FileSD: &FileSDConfig{Files: []string{"a.json", "targets.txt"}}},
			`discovery.file_sd.files[1]: "targets.txt" does not end in .json, .yml or .yaml`},
		{"file_sd bad glob", Config{FileSD: &FileSDConfig{Files: []string{"[a.json"}}},
			`discovery.file_sd.files[0]: "[a.json": syntax error in pattern`},
		{"http_sd without url", Config{HTTPSD: &HTTPSDConfig{}}, "discovery.http_sd.url: required"},
		{"http_sd bad scheme", Config{HTTPSD: &HTTPSDConfig{URL: "ftp://user:pw@h/sd"}},
			`discovery.http_sd.url: "ftp://xxxxx@h/sd": the scheme must be http or https`},
		{"http_sd no host", Config{HTTPSD: &HTTPSDConfig{URL: "http:///sd"}}, `discovery.http_sd.url: "http:///sd": no host`},
		{"http_sd unparsable", Config{HTTPSD: &HTTPSDConfig{URL: "http://h:port/"}},
			`discovery.http_sd.url: parse "http://h:port/": invalid port ":port" after host`},
		{"http_sd two auths", Config{HTTPSD: &HTTPSDConfig{URL: "http://h/sd", HTTPClientConfig: promconfig.HTTPClientConfig{
			BasicAuth:     &promconfig.BasicAuth{Username: "u"},
			Authorization: &promconfig.Authorization{Credentials: "t"},
		}}}, "discovery.http_sd.http_client_config: at most one of basic_auth, oauth2 & authorization must be configured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := New(tc.c, Options{})
			if err == nil {
				t.Fatalf("New = %v, want error %q", d, tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n got %q\nwant %q", err, tc.want)
			}
			// The key the configuration package places the error at.
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.HasPrefix(tc.want, strings.TrimSuffix("discovery."+ce.Key, ".")+": ") {
				t.Errorf("error %q is not a *ConfigError with its key (%+v)", err, ce)
			}
		})
	}
}

func TestNewMechanismAndRefresh(t *testing.T) {
	for _, tc := range []struct {
		c         Config
		mechanism string
		refresh   model.Duration
	}{
		{Config{DNS: &DNSConfig{Names: []string{"a"}, Port: 1}}, MechanismDNS, DefaultDNSRefresh},
		{Config{DNS: &DNSConfig{Names: []string{"a"}, Type: TypeSRV, Refresh: model.Duration(5e9)}}, MechanismDNS, model.Duration(5e9)},
		{Config{FileSD: &FileSDConfig{Files: []string{"*.yml"}}}, MechanismFileSD, DefaultFileSDRefresh},
		{Config{HTTPSD: &HTTPSDConfig{URL: "https://h/sd"}}, MechanismHTTPSD, DefaultHTTPSDRefresh},
	} {
		t.Run(tc.mechanism, func(t *testing.T) {
			d, err := New(tc.c, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if d.Mechanism() != tc.mechanism || model.Duration(d.refresh) != tc.refresh {
				t.Errorf("Mechanism() = %q, refresh %s; want %q, %s", d.Mechanism(), d.refresh, tc.mechanism, tc.refresh)
			}
			// The rules' discovery alerts read the same interval (rules/fleet.go).
			if got := tc.c.RefreshInterval(); got != d.refresh {
				t.Errorf("RefreshInterval() = %s, the discoverer refreshes every %s", got, d.refresh)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	got := merge([]Replica{
		{Addr: "10.0.0.9:8000", Labels: map[string]string{"zone": "a"}},
		{Addr: "10.0.0.10:8000"},
		{Addr: "10.0.0.9:8000", Labels: map[string]string{"zone": "b", "rack": "r1"}},
		{Addr: "[fd00::1]:8000", Labels: map[string]string{}},
		{Addr: "10.0.0.10:8000", Labels: map[string]string{"rack": "r2"}},
	})
	want := []Replica{
		{Addr: "10.0.0.10:8000", Labels: map[string]string{"rack": "r2"}},
		{Addr: "10.0.0.9:8000", Labels: map[string]string{"zone": "a", "rack": "r1"}},
		{Addr: "[fd00::1]:8000"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merge\n got %v\nwant %v", got, want)
	}
}

func TestReplicaURL(t *testing.T) {
	for _, tc := range []struct{ addr, scheme, prefix, want string }{
		{"10.0.0.7:8000", "http", "", "http://10.0.0.7:8000"},
		{"10.0.0.7:8000", "http", "/", "http://10.0.0.7:8000"},
		{"10.0.0.7:8000", "https", "/v1/", "https://10.0.0.7:8000/v1"},
		{"[fd00::7]:8000", "http", "/serving/llama//", "http://[fd00::7]:8000/serving/llama"},
		{"vllm-0.vllm.svc:8000", "http", "v1", "http://vllm-0.vllm.svc:8000/v1"},
	} {
		if got := (Replica{Addr: tc.addr}).URL(tc.scheme, tc.prefix); got != tc.want {
			t.Errorf("Replica{%q}.URL(%q, %q) = %q, want %q", tc.addr, tc.scheme, tc.prefix, got, tc.want)
		}
	}
}
