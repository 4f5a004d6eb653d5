//go:build linux

package client

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/rawread"
	"github.com/vllm-prober/vllm-prober/internal/rawread/rawreadtest"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/workload"
)

// rawPair returns a connection dialed by rawread.Dial whose reads have
// receive times, and its server end.
func rawPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	client, server = rawreadtest.Pair(t, rawread.Dial)
	waitForReceiveTimes(t, client, server)
	return client, server
}

// waitForReceiveTimes sends bytes from server to client until a read has
// a receive time: the kernel turns its receive stamps on for the whole
// host a little after the first socket asks for them, so the first
// segments of a process's first connection can go without.
func waitForReceiveTimes(t *testing.T, client, server net.Conn) {
	t.Helper()
	for range 200 {
		if _, err := server.Write([]byte{'w'}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(client, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		if _, ok := stampsOf(t, client).Last(); ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the kernel attached no receive time to any read in 2 s")
}

// stampsOf returns the receive times of c, a connection of rawread.Dial's.
func stampsOf(t *testing.T, c net.Conn) rawread.Stamps {
	t.Helper()
	s, ok := rawread.StampsOf(c)
	if !ok {
		t.Fatalf("no receive times for %T", c)
	}
	return s
}

// gatedReader lets each Read through only when the test opens the gate,
// and closes the channel the test opened it with when the Read returned
// (none once the gate is closed).
type gatedReader struct {
	r    io.Reader
	gate chan chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	read := <-g.gate
	n, err := g.r.Read(p)
	if read != nil {
		close(read)
	}
	return n, err
}

// TestStreamStampedOnArrival: a stream's events are stamped when their
// bytes reached the host, not when the prober read them. Each event is
// written and received, and only later is the reader let through; so an
// event stamped at its read would be later than its receipt.
func TestStreamStampedOnArrival(t *testing.T) {
	c, s := rawPair(t)
	r := newTestRequester(t, rqTarget("http://127.0.0.1:1"), rqProbe("chat"), Options{})
	if !r.arrivals {
		t.Fatal("a Requester on the real clock does not stamp arrivals")
	}
	gate := make(chan chan struct{})
	m := &measurement{start: time.Now(), fp: r.newHasher()}
	m.clock = &arrivalClock{now: time.Now, conn: stampsOf(t, c), floor: m.start}
	res := &probe.Result{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.readStream(context.Background(), res, &gatedReader{r: c, gate: gate}, m, workload.Item{})
	}()
	var delivered []time.Time // when each token event was known to be received
	for i, ev := range append(chatOK, "[DONE]") {
		if _, err := fmt.Fprintf(s, "data: %s\n\n", ev); err != nil {
			t.Fatal(err)
		}
		if at := rawreadtest.Delivered(t, s); i == 1 || i == 2 {
			delivered = append(delivered, at)
		}
		time.Sleep(20 * time.Millisecond) // the prober is late to read
		read := make(chan struct{})
		gate <- read
		<-read // one event a read
	}
	close(gate)
	s.Close() // the drain after [DONE] reads to the end
	<-done
	if res.Disposition != "" || res.Chunks != 2 || len(res.ITLs) != 1 {
		t.Fatalf("result %s/%s %q, %d chunks, ITLs %v", res.Disposition, res.Reason, res.Error, res.Chunks, res.ITLs)
	}
	if first := m.start.Add(res.TTFT); first.After(delivered[0]) {
		t.Errorf("first token stamped %v after it was received, want at its arrival", first.Sub(delivered[0]))
	}
	if second := m.first.Add(res.ITLs[0]); second.After(delivered[1]) {
		t.Errorf("second token stamped %v after it was received, want at its arrival", second.Sub(delivered[1]))
	}
}

// TestArrivalClock: the clock moves now back to the connection's receive
// time, never before its floor nor before its previous stamp, and reads
// now where there is no receive time.
func TestArrivalClock(t *testing.T) {
	c, s := rawPair(t)
	before := time.Now()
	if _, err := s.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	after := rawreadtest.Delivered(t, s)
	time.Sleep(20 * time.Millisecond)
	if _, err := c.Read(make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	read := time.Now()

	a := &arrivalClock{now: time.Now, conn: stampsOf(t, c), floor: before}
	got := a.stamp()
	if got.Before(before) || got.After(after) {
		t.Errorf("stamp %v after the write began, want before its receipt, %v", got.Sub(before), after.Sub(before))
	}
	// Moved back from a later now by the wall clock, the same receive time
	// may come out a few nanoseconds apart, never earlier.
	if again := a.stamp(); again.Before(got) || again.After(after) {
		t.Errorf("a second stamp of the same read = %v after the write began, want from %v to %v", again.Sub(before), got.Sub(before), after.Sub(before))
	}

	late := &arrivalClock{now: time.Now, conn: stampsOf(t, c), floor: read}
	if got := late.stamp(); !got.Equal(read) {
		t.Errorf("stamp %v before its floor", read.Sub(got))
	}

	var none arrivalClock
	none.now = func() time.Time { return read }
	if got := none.stamp(); !got.Equal(read) {
		t.Errorf("without a connection stamp = %v, want now", got)
	}
}

// TestArrivalClockOfRequest: a request sent by a Requester's HTTP client,
// over plain HTTP and over TLS, gets a clock with its connection's receive
// times (the client wraps each dialed connection, TLS wraps it again); a
// Requester on a clock of its own reads none.
func TestArrivalClockOfRequest(t *testing.T) {
	h := streamHandler(chatOK)
	plain := httptest.NewServer(h)
	t.Cleanup(plain.Close)
	secure := httptest.NewTLSServer(h)
	t.Cleanup(secure.Close)
	tlsTarget := rqTarget(secure.URL)
	tlsTarget.HTTPClientConfig.TLSConfig.InsecureSkipVerify = true
	for _, c := range []struct {
		name   string
		target config.Target
		o      Options
		want   bool
	}{
		{"http", rqTarget(plain.URL), Options{}, true},
		{"https", tlsTarget, Options{}, true},
		{"own clock", rqTarget(plain.URL), Options{Now: time.Now}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newTestRequester(t, c.target, rqProbe("chat"), c.o)
			tr := &phaseTrace{now: r.opts.Now}
			start := time.Now()
			req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), tr.clientTrace()),
				http.MethodPost, r.url, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := r.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if _, err := io.ReadAll(resp.Body); err != nil {
				t.Fatal(err)
			}
			clock := r.arrivalClock(tr, start, resp)
			if _, ok := clock.conn.Last(); ok != c.want {
				t.Errorf("receive times found: %v, want %v", ok, c.want)
			}
		})
	}
}

// slowTransport waits delay before each request: the HTTP client's own
// work on a request, before its first byte is written.
type slowTransport struct {
	delay time.Duration
	next  http.RoundTripper
}

func (s slowTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	time.Sleep(s.delay)
	return s.next.RoundTrip(req)
}

// TestSentWhenFirstByteWritten: a request on a reused HTTP/1 connection
// is sent when its first byte is written, not when it was handed to the
// HTTP client: a request that the client holds for 30 ms has a send time
// at least 30 ms after it was handed over, and no later than its response
// headers came, and its response is stamped no earlier. A request that
// dialed, and one answered over HTTP/2 or not at all, keep the time they
// were handed over, and stamps no earlier than the WroteRequest trace.
func TestSentWhenFirstByteWritten(t *testing.T) {
	srv := httptest.NewServer(streamHandler(chatOK))
	t.Cleanup(srv.Close)
	r := newTestRequester(t, rqTarget(srv.URL), rqProbe("chat"), Options{})
	const delay = 30 * time.Millisecond
	slow := *r.client
	slow.Transport = slowTransport{delay, r.client.Transport}
	r.client = &slow
	do := func() (start, headers time.Time, clock *arrivalClock, tr *phaseTrace, resp *http.Response) {
		t.Helper()
		tr = &phaseTrace{now: time.Now}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), tr.clientTrace()),
			http.MethodPost, r.url, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		resp, err = r.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		headers = time.Now()
		clock = r.arrivalClock(tr, start, resp)
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return start, headers, clock, tr, resp
	}
	start, _, clock, _, _ := do()
	if got := clock.sentAt(start); !got.Equal(start) {
		t.Errorf("a request that dialed: sent %v after it was handed over, want 0", got.Sub(start))
	}
	for i := range 3 {
		start, headers, clock, tr, resp := do()
		if _, reused, _ := tr.sent(); !reused {
			t.Fatalf("request %d did not reuse the connection", i+2)
		}
		sent := clock.sentAt(start)
		if sent.Sub(start) < delay || sent.After(headers) {
			t.Errorf("request %d: sent %v after it was handed over and %v before its headers came, want at least %v and not after",
				i+2, sent.Sub(start), headers.Sub(sent), delay)
		}
		if !clock.floor.Equal(sent) {
			t.Errorf("request %d: stamps not before %v after it was handed over, want its send time, %v", i+2, clock.floor.Sub(start), sent.Sub(start))
		}
		h2 := *resp
		h2.ProtoMajor, h2.ProtoMinor = 2, 0
		for _, c := range []struct {
			name string
			resp *http.Response
		}{{"over HTTP/2", &h2}, {"without a response", nil}} {
			other := r.arrivalClock(tr, start, c.resp)
			if got := other.sentAt(start); !got.Equal(start) {
				t.Errorf("request %d %s: sent %v after it was handed over, want 0", i+2, c.name, got.Sub(start))
			}
			if _, _, wrote := tr.sent(); !other.floor.Equal(wrote) {
				t.Errorf("request %d %s: stamps not before %v after it was handed over, want the WroteRequest trace's %v",
					i+2, c.name, other.floor.Sub(start), wrote.Sub(start))
			}
		}
	}
}
