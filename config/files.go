package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	promconfig "github.com/prometheus/common/config"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/vllm-prober/vllm-prober/config/strictyaml"
	"github.com/vllm-prober/vllm-prober/internal/fileread"
)

// NewSchemaCompiler returns a JSON Schema compiler whose file: loader
// reads each schema file (the one named and any it refers to) through
// fileread, capped at fileread.SchemaLimit. Like jsonschema's default
// loader, it loads file: URLs only.
func NewSchemaCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{"file": schemaFileLoader{}})
	return c
}

type schemaFileLoader struct{}

// Load implements jsonschema.URLLoader.
func (schemaFileLoader) Load(url string) (any, error) {
	path, err := jsonschema.FileLoader{}.ToFile(url)
	if err != nil {
		return nil, err
	}
	f, err := fileread.Open(path, fileread.SchemaLimit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return jsonschema.UnmarshalJSON(fileread.Limit(f, path, fileread.SchemaLimit))
}

// credentialFile is a file an http_client_config names.
type credentialFile struct {
	key  string // path below http_client_config
	path string
}

// credentialFiles lists the files of hc, which prometheus/common reads
// itself (credentials at every request, TLS files when the client is
// built), so their reads cannot be capped; the config checks them instead.
func credentialFiles(hc *promconfig.HTTPClientConfig) []credentialFile {
	files := []credentialFile{{"bearer_token_file", hc.BearerTokenFile}}
	tls := func(prefix string, t promconfig.TLSConfig) {
		files = append(files, credentialFile{prefix + "ca_file", t.CAFile}, credentialFile{prefix + "cert_file", t.CertFile},
			credentialFile{prefix + "key_file", t.KeyFile})
	}
	tls("tls_config.", hc.TLSConfig)
	if a := hc.BasicAuth; a != nil {
		files = append(files, credentialFile{"basic_auth.username_file", a.UsernameFile}, credentialFile{"basic_auth.password_file", a.PasswordFile})
	}
	if a := hc.Authorization; a != nil {
		files = append(files, credentialFile{"authorization.credentials_file", a.CredentialsFile})
	}
	if o := hc.OAuth2; o != nil {
		files = append(files, credentialFile{"oauth2.client_secret_file", o.ClientSecretFile},
			credentialFile{"oauth2.client_certificate_key_file", o.ClientCertificateKeyFile})
		tls("oauth2.tls_config.", o.TLSConfig)
	}
	if h := hc.HTTPHeaders; h != nil {
		names := make([]string, 0, len(h.Headers))
		for name := range h.Headers {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			for i, f := range h.Headers[name].Files {
				files = append(files, credentialFile{fmt.Sprintf("http_headers.%s.files[%d]", name, i), f})
			}
		}
	}
	return files
}

// checkCredentialFiles reports credential files that are not regular files
// or exceed fileread.CredentialLimit. A missing file is left to the
// request that reads it, as Prometheus does (a secret may be mounted later).
// Relative paths are shown relative to dir, the config file's directory.
func checkCredentialFiles(hc *promconfig.HTTPClientConfig, path, dir string, p *strictyaml.Problems) {
	for _, f := range credentialFiles(hc) {
		if f.path == "" {
			continue
		}
		key := path + "." + f.key
		shown := f.path // SetDirectory made it absolute; show it as written
		if rel, err := filepath.Rel(dir, f.path); err == nil && filepath.IsLocal(rel) {
			shown = rel
		}
		switch err := fileread.Stat(f.path, fileread.CredentialLimit); {
		case errors.Is(err, fileread.ErrNotRegular):
			p.Fail(key, "must be a regular file, got %s", strictyaml.Quote(shown))
		case errors.Is(err, fileread.ErrTooLarge):
			p.Fail(key, "must be at most %s, got %s", fileread.Size(fileread.CredentialLimit), strictyaml.Quote(shown))
		}
	}
}
