package discovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// dnsSource looks up the A, AAAA or SRV records of its names.
type dnsSource struct {
	names    []string
	typ      string
	port     string // A and AAAA
	resolver *net.Resolver
}

// newDNS checks c and returns its source and refresh interval.
func newDNS(c DNSConfig, r *net.Resolver) (*dnsSource, time.Duration, error) {
	if len(c.Names) == 0 {
		return nil, 0, invalid("dns.names", "at least one name is required")
	}
	for i, name := range c.Names {
		if err := checkDomainName(name); err != nil {
			return nil, 0, invalid(fmt.Sprintf("dns.names[%d]", i), "%q: %w", name, err)
		}
	}
	s := &dnsSource{names: c.Names, typ: c.Type, resolver: r}
	if s.typ == "" {
		s.typ = TypeA
	}
	switch s.typ {
	case TypeA, TypeAAAA:
		if c.Port < 1 || c.Port > 65535 {
			return nil, 0, invalid("dns.port", "%d is not a port from 1 to 65535 (type %s records carry no port)", c.Port, s.typ)
		}
		s.port = strconv.Itoa(c.Port)
	case TypeSRV:
		if c.Port != 0 {
			return nil, 0, invalid("dns.port", "not used with type SRV, whose records carry their own ports")
		}
	default:
		return nil, 0, invalid("dns.type", "%q is not one of A, AAAA and SRV", c.Type)
	}
	return s, refreshOf(c.Refresh, DefaultDNSRefresh), nil
}

// lookup returns the union of what every name resolves to. A name the
// server answers with NXDOMAIN or with no records adds nothing; any other
// lookup error (timeout, SERVFAIL, refused) fails the whole refresh.
func (s *dnsSource) lookup(ctx context.Context) ([]Replica, error) {
	var found []Replica
	for _, name := range s.names {
		replicas, err := s.lookupName(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("%s records of %s: %w", s.typ, name, err)
		}
		found = append(found, replicas...)
	}
	return found, nil
}

func (s *dnsSource) lookupName(ctx context.Context, name string) ([]Replica, error) {
	if s.typ == TypeSRV {
		// An empty service and proto look name itself up.
		_, records, err := s.resolver.LookupSRV(ctx, "", "", name)
		if err != nil {
			return nil, notFoundIsEmpty(err)
		}
		var found []Replica
		for _, rec := range records {
			// The target name is kept as the host, as Prometheus' DNS
			// discovery does: the replica's URL then names it, for TLS.
			host := strings.TrimSuffix(rec.Target, ".")
			if host == "" { // "." means no service at this name
				continue
			}
			found = append(found, Replica{Addr: net.JoinHostPort(host, strconv.Itoa(int(rec.Port)))})
		}
		return found, nil
	}
	network := "ip4"
	if s.typ == TypeAAAA {
		network = "ip6"
	}
	ips, err := s.resolver.LookupIP(ctx, network, name)
	if err != nil {
		return nil, notFoundIsEmpty(err)
	}
	found := make([]Replica, len(ips))
	for i, ip := range ips {
		found[i] = Replica{Addr: net.JoinHostPort(ip.String(), s.port)}
	}
	return found, nil
}

// notFoundIsEmpty returns nil for an answer saying the name has no such
// records (NXDOMAIN, or NOERROR without records), and err otherwise.
func notFoundIsEmpty(err error) error {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		return nil
	}
	return err
}

// checkDomainName refuses a name no DNS server can answer for, which Go's
// resolver would report as not found without asking: an empty set instead
// of the configuration error it is.
func checkDomainName(name string) error {
	trimmed := strings.TrimSuffix(name, ".")
	if trimmed == "" || len(trimmed) > 253 {
		return errors.New("not a domain name (1 to 253 characters)")
	}
	for label := range strings.SplitSeq(trimmed, ".") {
		if label == "" || len(label) > 63 {
			return errors.New("not a domain name (empty label or one longer than 63 characters)")
		}
		if i := strings.IndexFunc(label, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
		}); i >= 0 {
			r, _ := utf8.DecodeRuneInString(label[i:])
			return fmt.Errorf("not a domain name (character %q)", r)
		}
	}
	return nil
}
