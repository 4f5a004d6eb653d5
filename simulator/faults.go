package simulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Default durations of the timed faults when their duration is left at 0.
const (
	DefaultSlowHeadersDelay = 5 * time.Second
	DefaultStallDuration    = 120 * time.Second
)

// Faults holds the rate (probability in [0, 1], drawn per request) of each
// fault kind and the extra latencies added to every request. Its JSON form
// is the body of POST /sim/faults; durations are Go duration strings
// ("250ms") or numbers of seconds.
type Faults struct {
	// HTTP500, HTTP503 and HTTP429 answer before streaming with that status
	// and a vLLM error body.
	HTTP500 float64 `json:"http_500"`
	HTTP503 float64 `json:"http_503"`
	HTTP429 float64 `json:"http_429"`
	// SlowHeaders delays the response headers by SlowHeadersDelay.
	SlowHeaders      float64       `json:"slow_headers"`
	SlowHeadersDelay time.Duration `json:"slow_headers_delay"`
	// Stall stops sending mid-stream for StallDuration, then resumes.
	Stall         float64       `json:"stall"`
	StallDuration time.Duration `json:"stall_duration"`
	// Disconnect closes the connection mid-stream without the terminating chunk.
	Disconnect float64 `json:"disconnect"`
	// ErrorEvent sends vLLM's in-stream error event then [DONE] mid-stream.
	ErrorEvent float64 `json:"error_event"`
	// MalformedEvent inserts an event whose JSON is truncated mid-stream.
	MalformedEvent float64 `json:"malformed_event"`
	// NoDone ends the stream cleanly without `data: [DONE]`.
	NoDone float64 `json:"no_done"`
	// WrongModel reports a model name other than the served one.
	WrongModel float64 `json:"wrong_model"`
	// BadAnswer answers questions wrongly (quality probes).
	BadAnswer float64 `json:"bad_answer"`
	// BadToolCall makes the arguments of a forced tool call invalid JSON.
	// It is drawn from its own seeded stream, so setting it leaves the
	// other kinds' draws as they were.
	BadToolCall float64 `json:"bad_tool_call"`
	// OutputVariant changes the deterministic text of every answer for
	// requests that arrive after it is set; 0 is the original text.
	OutputVariant int `json:"output_variant"`
	// ExtraTTFT delays the first event of every request; ExtraITL delays
	// every later event by a further ExtraITL (so every gap grows by it).
	ExtraTTFT time.Duration `json:"extra_ttft"`
	ExtraITL  time.Duration `json:"extra_itl"`
}

// faultsWire is the JSON form of Faults with durations as raw values.
type faultsWire struct {
	HTTP500          float64         `json:"http_500"`
	HTTP503          float64         `json:"http_503"`
	HTTP429          float64         `json:"http_429"`
	SlowHeaders      float64         `json:"slow_headers"`
	SlowHeadersDelay json.RawMessage `json:"slow_headers_delay"`
	Stall            float64         `json:"stall"`
	StallDuration    json.RawMessage `json:"stall_duration"`
	Disconnect       float64         `json:"disconnect"`
	ErrorEvent       float64         `json:"error_event"`
	MalformedEvent   float64         `json:"malformed_event"`
	NoDone           float64         `json:"no_done"`
	WrongModel       float64         `json:"wrong_model"`
	BadAnswer        float64         `json:"bad_answer"`
	BadToolCall      float64         `json:"bad_tool_call"`
	OutputVariant    int             `json:"output_variant"`
	ExtraTTFT        json.RawMessage `json:"extra_ttft"`
	ExtraITL         json.RawMessage `json:"extra_itl"`
}

// MarshalJSON writes durations as Go duration strings.
func (f Faults) MarshalJSON() ([]byte, error) {
	d := func(v time.Duration) json.RawMessage { return json.RawMessage(`"` + v.String() + `"`) }
	return json.Marshal(faultsWire{
		HTTP500: f.HTTP500, HTTP503: f.HTTP503, HTTP429: f.HTTP429,
		SlowHeaders: f.SlowHeaders, SlowHeadersDelay: d(f.SlowHeadersDelay),
		Stall: f.Stall, StallDuration: d(f.StallDuration),
		Disconnect: f.Disconnect, ErrorEvent: f.ErrorEvent, MalformedEvent: f.MalformedEvent,
		NoDone: f.NoDone, WrongModel: f.WrongModel, BadAnswer: f.BadAnswer,
		BadToolCall: f.BadToolCall, OutputVariant: f.OutputVariant,
		ExtraTTFT: d(f.ExtraTTFT), ExtraITL: d(f.ExtraITL),
	})
}

// UnmarshalJSON reads Faults strictly: unknown keys are errors.
func (f *Faults) UnmarshalJSON(b []byte) error {
	var w faultsWire
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return fmt.Errorf("decode faults: %w", err)
	}
	out := Faults{
		HTTP500: w.HTTP500, HTTP503: w.HTTP503, HTTP429: w.HTTP429,
		SlowHeaders: w.SlowHeaders, Stall: w.Stall, Disconnect: w.Disconnect,
		ErrorEvent: w.ErrorEvent, MalformedEvent: w.MalformedEvent, NoDone: w.NoDone,
		WrongModel: w.WrongModel, BadAnswer: w.BadAnswer,
		BadToolCall: w.BadToolCall, OutputVariant: w.OutputVariant,
	}
	var err error
	for _, p := range []struct {
		name string
		raw  json.RawMessage
		dst  *time.Duration
	}{
		{"slow_headers_delay", w.SlowHeadersDelay, &out.SlowHeadersDelay},
		{"stall_duration", w.StallDuration, &out.StallDuration},
		{"extra_ttft", w.ExtraTTFT, &out.ExtraTTFT},
		{"extra_itl", w.ExtraITL, &out.ExtraITL},
	} {
		if *p.dst, err = parseJSONDuration(p.raw); err != nil {
			return fmt.Errorf("decode faults: %s: %w", p.name, err)
		}
	}
	*f = out
	return nil
}

// parseJSONDuration accepts a Go duration string or a number of seconds.
func parseJSONDuration(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("parse duration %q: %w", s, err)
		}
		return d, nil
	}
	var secs float64
	if err := json.Unmarshal(raw, &secs); err != nil {
		return 0, fmt.Errorf("want a duration string or seconds, got %s", raw)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// Validate reports rates outside [0, 1], negative durations and a
// negative output variant.
func (f Faults) Validate() error {
	var errs []error
	for _, r := range append(f.rates(), kindRate{faultBadToolCall, f.BadToolCall}) {
		if !(r.rate >= 0 && r.rate <= 1) {
			errs = append(errs, fmt.Errorf("fault %s rate %g: must be in [0, 1]", r.kind, r.rate))
		}
	}
	if f.OutputVariant < 0 {
		errs = append(errs, fmt.Errorf("output_variant %d: must not be negative", f.OutputVariant))
	}
	for name, d := range map[string]time.Duration{"slow_headers_delay": f.SlowHeadersDelay, "stall_duration": f.StallDuration, "extra_ttft": f.ExtraTTFT, "extra_itl": f.ExtraITL} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("fault %s %s: must not be negative", name, d))
		}
	}
	return errors.Join(errs...)
}

// faultKind names one fault; it is also what the trace records.
type faultKind string

// Fault kinds, in the order they are drawn for each request.
const (
	faultNone        faultKind = ""
	fault500         faultKind = "http_500"
	fault503         faultKind = "http_503"
	fault429         faultKind = "http_429"
	faultSlowHeaders faultKind = "slow_headers"
	faultStall       faultKind = "stall"
	faultDisconnect  faultKind = "disconnect"
	faultErrorEvent  faultKind = "error_event"
	faultMalformed   faultKind = "malformed_event"
	faultNoDone      faultKind = "no_done"
	faultWrongModel  faultKind = "wrong_model"
	faultBadAnswer   faultKind = "bad_answer"
	faultBadToolCall faultKind = "bad_tool_call"
)

type kindRate struct {
	kind faultKind
	rate float64
}

func (f Faults) rates() []kindRate {
	return []kindRate{
		{fault500, f.HTTP500}, {fault503, f.HTTP503}, {fault429, f.HTTP429},
		{faultSlowHeaders, f.SlowHeaders}, {faultStall, f.Stall}, {faultDisconnect, f.Disconnect},
		{faultErrorEvent, f.ErrorEvent}, {faultMalformed, f.MalformedEvent}, {faultNoDone, f.NoDone},
		{faultWrongModel, f.WrongModel}, {faultBadAnswer, f.BadAnswer},
	}
}

// faultPlan is what happens to one request. At most one fault that ends or
// breaks the response applies (the first drawn), while wrong_model,
// bad_answer and slow_headers combine with it.
type faultPlan struct {
	terminal    faultKind // http_*, stall, disconnect, error_event, malformed_event, no_done
	slowHeaders time.Duration
	stall       time.Duration
	wrongModel  bool
	badAnswer   bool
	badToolCall bool
	variant     int // output variant
	extraTTFT   time.Duration
	extraITL    time.Duration
}

// kinds lists the faults of the plan for the trace.
func (p faultPlan) kinds() []string {
	var out []string
	if p.terminal != faultNone {
		out = append(out, string(p.terminal))
	}
	if p.slowHeaders > 0 {
		out = append(out, string(faultSlowHeaders))
	}
	if p.wrongModel {
		out = append(out, string(faultWrongModel))
	}
	if p.badAnswer {
		out = append(out, string(faultBadAnswer))
	}
	if p.badToolCall {
		out = append(out, string(faultBadToolCall))
	}
	return out
}

// faultState is the runtime-changeable fault configuration with its seeded
// random sources.
type faultState struct {
	mu      sync.Mutex
	f       Faults
	rng     *rand.Rand
	toolRNG *rand.Rand // bad_tool_call only
}

func newFaultState(f Faults, seed int64) *faultState {
	return &faultState{f: f, rng: rand.New(rand.NewPCG(uint64(seed), 0xfa17)), toolRNG: rand.New(rand.NewPCG(uint64(seed), 0x7001))}
}

func (s *faultState) get() Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f
}

func (s *faultState) set(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.f = f
}

// draw decides the faults of one request. Every kind consumes one draw in
// a fixed order, so the sequence of plans depends only on the seed and the
// request order.
func (s *faultState) draw() faultPlan {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := faultPlan{extraTTFT: s.f.ExtraTTFT, extraITL: s.f.ExtraITL, variant: s.f.OutputVariant,
		badToolCall: s.toolRNG.Float64() < s.f.BadToolCall}
	for _, kr := range s.f.rates() {
		hit := s.rng.Float64() < kr.rate
		if !hit {
			continue
		}
		switch kr.kind {
		case faultSlowHeaders:
			p.slowHeaders = orDefault(s.f.SlowHeadersDelay, DefaultSlowHeadersDelay)
		case faultWrongModel:
			p.wrongModel = true
		case faultBadAnswer:
			p.badAnswer = true
		default:
			if p.terminal == faultNone {
				p.terminal = kr.kind
			}
		}
	}
	if p.terminal == faultStall {
		p.stall = orDefault(s.f.StallDuration, DefaultStallDuration)
	}
	return p
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
