package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/vllm-prober/vllm-prober/probe"
)

// phaseTrace records httptrace events. Dials can finish on other
// goroutines, even after the request got another connection, hence the
// lock.
type phaseTrace struct {
	now func() time.Time

	mu                  sync.Mutex
	dnsStart, dnsDone   time.Time
	connStart, connDone time.Time
	tlsStart, tlsDone   time.Time
	tlsErr              bool
	wrote               time.Time
	conn                net.Conn // the connection the request got
	reused              bool     // conn served an earlier request
}

func (p *phaseTrace) stamp(t *time.Time) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.IsZero() {
		*t = now
	}
}

func (p *phaseTrace) clientTrace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		DNSStart:     func(httptrace.DNSStartInfo) { p.stamp(&p.dnsStart) },
		DNSDone:      func(httptrace.DNSDoneInfo) { p.stamp(&p.dnsDone) },
		ConnectStart: func(string, string) { p.stamp(&p.connStart) },
		ConnectDone: func(_, _ string, err error) {
			if err == nil {
				p.stamp(&p.connDone)
			}
		},
		TLSHandshakeStart: func() { p.stamp(&p.tlsStart) },
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			if err != nil {
				p.mu.Lock()
				p.tlsErr = true
				p.mu.Unlock()
				return
			}
			p.stamp(&p.tlsDone)
		},
		GotConn: func(i httptrace.GotConnInfo) {
			p.mu.Lock()
			p.conn, p.reused = i.Conn, i.Reused
			p.mu.Unlock()
		},
		WroteRequest: func(httptrace.WroteRequestInfo) { p.stamp(&p.wrote) },
	}
}

// sent returns the connection the request got, whether it was reused,
// and when the request was written (zero when it was not).
func (p *phaseTrace) sent() (conn net.Conn, reused bool, wrote time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conn, p.reused, p.wrote
}

// fill records the phases that completed; the headers phase ends at
// headers when gotHeaders says the response headers arrived.
func (p *phaseTrace) fill(res *probe.Result, headers time.Time, gotHeaders bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	span := func(name string, from, to time.Time) {
		if !from.IsZero() && !to.IsZero() && !to.Before(from) {
			setPhase(res, name, to.Sub(from))
		}
	}
	span(probe.PhaseDNS, p.dnsStart, p.dnsDone)
	span(probe.PhaseConnect, p.connStart, p.connDone)
	span(probe.PhaseTLS, p.tlsStart, p.tlsDone)
	if gotHeaders {
		span(probe.PhaseHeaders, p.wrote, headers)
	}
}

// tlsFailed reports a TLS handshake that started and did not succeed.
func (p *phaseTrace) tlsFailed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tlsErr || (!p.tlsStart.IsZero() && p.tlsDone.IsZero())
}

// classifyTransportError records a request that got no response.
func classifyTransportError(ctx context.Context, res *probe.Result, err error, tr *phaseTrace) {
	if endedByContext(ctx, res) {
		return
	}
	res.Disposition = probe.ServerFailure
	var (
		dnsErr  *net.DNSError
		recErr  tls.RecordHeaderError
		alert   tls.AlertError
		certErr *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
	)
	switch {
	case errors.As(err, &dnsErr):
		res.Reason = probe.ReasonDNS
	case tr.tlsFailed(), errors.As(err, &recErr), errors.As(err, &alert), errors.As(err, &certErr),
		errors.As(err, &unknown), errors.As(err, &host):
		res.Reason = probe.ReasonTLS
	default:
		res.Reason = probe.ReasonConnect
	}
	res.Error = truncate(unwrapURLError(err).Error(), maxErrorLen)
}
