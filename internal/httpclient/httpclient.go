// Package httpclient builds the HTTP clients the prober sends with, from
// an http_client_config, with one redirect policy and one User-Agent for
// probe requests, server scrapes and http_sd discovery alike.
package httpclient

import (
	"errors"
	"net"
	"net/http"
	"net/url"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/version"
)

// appName is the prober's name in its User-Agent.
const appName = "vllm-prober"

// UserAgent names the prober and its version ("vllm-prober/v1.2.3") in
// requests to targets and discovery endpoints; just "vllm-prober" when no
// version is known.
func UserAgent() string {
	if version.Version == "" {
		return appName
	}
	return appName + "/" + version.Version
}

// maxRedirects is how many redirects an opted-in client follows, as
// net/http's default policy.
const maxRedirects = 10

// New builds an HTTP client from an http_client_config: a target's, for
// probe requests and server scrapes, or an http_sd endpoint's.
// Redirects are not followed unless follow_redirects is true (the 3xx
// answer is returned as it is); when they are, only redirects to the same
// scheme, host and port are followed, because the client's credentials
// (authorization, basic_auth, oauth2) are added to every request it sends,
// redirected ones included. A redirect elsewhere returns the 3xx answer.
func New(hc promconfig.HTTPClientConfig, name string, opts ...promconfig.HTTPClientOption) (*http.Client, error) {
	c, err := promconfig.NewClientFromConfig(hc, name, opts...)
	if err != nil {
		return nil, err
	}
	if hc.FollowRedirects {
		c.CheckRedirect = sameOriginRedirect
	} else {
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	return c, nil
}

// sameOriginRedirect follows a redirect only to the origin of the first
// request, at most maxRedirects times.
func sameOriginRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return errors.New("stopped after 10 redirects")
	}
	if origin(req.URL) != origin(via[0].URL) {
		return http.ErrUseLastResponse
	}
	return nil
}

// origin is scheme://host:port with the scheme's default port filled in.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return u.Scheme + "://" + net.JoinHostPort(u.Hostname(), port)
}
