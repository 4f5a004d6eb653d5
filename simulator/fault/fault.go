// Package fault holds the simulator's fault configuration (the body of
// POST /sim/faults) and draws, from seeded random sources, the faults of
// each request.
package fault

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

// Config holds the rate (probability in [0, 1], drawn per request) of each
// fault kind and the extra latencies added to every request. Its JSON form
// is the body of POST /sim/faults; durations are Go duration strings
// ("250ms") or numbers of seconds.
type Config struct {
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

// configFields is Config without its methods, so that faultsWire can
// embed it without recursing into Config's JSON methods.
type configFields Config

// faultsWire is the JSON form of Config: its rates as they are, and its
// durations as raw values, which shadow the embedded time.Duration fields.
type faultsWire struct {
	configFields
	SlowHeadersDelay json.RawMessage `json:"slow_headers_delay"`
	StallDuration    json.RawMessage `json:"stall_duration"`
	ExtraTTFT        json.RawMessage `json:"extra_ttft"`
	ExtraITL         json.RawMessage `json:"extra_itl"`
}

// durationField is one duration of Config: its JSON key, its raw value in
// a faultsWire and its value in a Config.
type durationField struct {
	name string
	raw  *json.RawMessage
	dst  *time.Duration
}

// durations lists the duration fields of c, each with its raw value in w.
func (w *faultsWire) durations(c *Config) []durationField {
	return []durationField{
		{"slow_headers_delay", &w.SlowHeadersDelay, &c.SlowHeadersDelay},
		{"stall_duration", &w.StallDuration, &c.StallDuration},
		{"extra_ttft", &w.ExtraTTFT, &c.ExtraTTFT},
		{"extra_itl", &w.ExtraITL, &c.ExtraITL},
	}
}

// MarshalJSON writes durations as Go duration strings.
func (f Config) MarshalJSON() ([]byte, error) {
	w := faultsWire{configFields: configFields(f)}
	for _, d := range w.durations(&f) {
		*d.raw = json.RawMessage(`"` + d.dst.String() + `"`)
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads Config strictly: unknown keys are errors.
func (f *Config) UnmarshalJSON(b []byte) error {
	var w faultsWire
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return fmt.Errorf("decode faults: %w", err)
	}
	out := Config(w.configFields)
	var err error
	for _, d := range w.durations(&out) {
		if *d.dst, err = parseJSONDuration(*d.raw); err != nil {
			return fmt.Errorf("decode faults: %s: %w", d.name, err)
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
func (f Config) Validate() error {
	var errs []error
	for _, r := range append(f.rates(), kindRate{KindBadToolCall, f.BadToolCall}) {
		if !(r.rate >= 0 && r.rate <= 1) {
			errs = append(errs, fmt.Errorf("fault %s rate %g: must be in [0, 1]", r.kind, r.rate))
		}
	}
	if f.OutputVariant < 0 {
		errs = append(errs, fmt.Errorf("output_variant %d: must not be negative", f.OutputVariant))
	}
	for _, d := range new(faultsWire).durations(&f) {
		if *d.dst < 0 {
			errs = append(errs, fmt.Errorf("fault %s %s: must not be negative", d.name, *d.dst))
		}
	}
	return errors.Join(errs...)
}

// Kind names one fault; it is also what the trace records.
type Kind string

// Fault kinds, in the order they are drawn for each request.
const (
	KindNone        Kind = ""
	KindHTTP500     Kind = "http_500"
	KindHTTP503     Kind = "http_503"
	KindHTTP429     Kind = "http_429"
	KindSlowHeaders Kind = "slow_headers"
	KindStall       Kind = "stall"
	KindDisconnect  Kind = "disconnect"
	KindErrorEvent  Kind = "error_event"
	KindMalformed   Kind = "malformed_event"
	KindNoDone      Kind = "no_done"
	KindWrongModel  Kind = "wrong_model"
	KindBadAnswer   Kind = "bad_answer"
	KindBadToolCall Kind = "bad_tool_call"
)

type kindRate struct {
	kind Kind
	rate float64
}

func (f Config) rates() []kindRate {
	return []kindRate{
		{KindHTTP500, f.HTTP500}, {KindHTTP503, f.HTTP503}, {KindHTTP429, f.HTTP429},
		{KindSlowHeaders, f.SlowHeaders}, {KindStall, f.Stall}, {KindDisconnect, f.Disconnect},
		{KindErrorEvent, f.ErrorEvent}, {KindMalformed, f.MalformedEvent}, {KindNoDone, f.NoDone},
		{KindWrongModel, f.WrongModel}, {KindBadAnswer, f.BadAnswer},
	}
}

// Plan is what happens to one request. At most one fault that ends or
// breaks the response applies (the first drawn), while wrong_model,
// bad_answer and slow_headers combine with it.
type Plan struct {
	Terminal    Kind // http_*, stall, disconnect, error_event, malformed_event, no_done
	SlowHeaders time.Duration
	Stall       time.Duration
	WrongModel  bool
	BadAnswer   bool
	BadToolCall bool
	Variant     int // output variant
	ExtraTTFT   time.Duration
	ExtraITL    time.Duration
}

// Kinds lists the faults of the plan for the trace.
func (p Plan) Kinds() []string {
	var out []string
	if p.Terminal != KindNone {
		out = append(out, string(p.Terminal))
	}
	if p.SlowHeaders > 0 {
		out = append(out, string(KindSlowHeaders))
	}
	if p.WrongModel {
		out = append(out, string(KindWrongModel))
	}
	if p.BadAnswer {
		out = append(out, string(KindBadAnswer))
	}
	if p.BadToolCall {
		out = append(out, string(KindBadToolCall))
	}
	return out
}

// State is the runtime-changeable fault configuration with its seeded
// random sources.
type State struct {
	mu      sync.Mutex
	f       Config
	rng     *rand.Rand
	toolRNG *rand.Rand // bad_tool_call only
}

func NewState(f Config, seed int64) *State {
	return &State{f: f, rng: rand.New(rand.NewPCG(uint64(seed), 0xfa17)), toolRNG: rand.New(rand.NewPCG(uint64(seed), 0x7001))}
}

func (s *State) Get() Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f
}

func (s *State) Set(f Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.f = f
}

// Draw decides the faults of one request. Every kind consumes one draw in
// a fixed order, so the sequence of plans depends only on the seed and the
// request order.
func (s *State) Draw() Plan {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := Plan{ExtraTTFT: s.f.ExtraTTFT, ExtraITL: s.f.ExtraITL, Variant: s.f.OutputVariant,
		BadToolCall: s.toolRNG.Float64() < s.f.BadToolCall}
	for _, kr := range s.f.rates() {
		hit := s.rng.Float64() < kr.rate
		if !hit {
			continue
		}
		switch kr.kind {
		case KindSlowHeaders:
			p.SlowHeaders = orDefault(s.f.SlowHeadersDelay, DefaultSlowHeadersDelay)
		case KindWrongModel:
			p.WrongModel = true
		case KindBadAnswer:
			p.BadAnswer = true
		default:
			if p.Terminal == KindNone {
				p.Terminal = kr.kind
			}
		}
	}
	if p.Terminal == KindStall {
		p.Stall = orDefault(s.f.StallDuration, DefaultStallDuration)
	}
	return p
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
