package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/vllm-prober/vllm-prober/config/strictyaml"
	"github.com/vllm-prober/vllm-prober/internal/fileread"
)

// ReservedExtraKeys are request body keys the prober sets itself; setting
// them in request.extra would change what is measured.
var ReservedExtraKeys = []string{
	"model", "prompt", "messages", "stream", "stream_options",
	"max_tokens", "max_completion_tokens", "temperature", "ignore_eos", "n",
}

func (v *validator) probe(p *Probe, path string, seen map[string]int) {
	v.name(path+".name", p.Name, seen)
	if p.API != APIChat && p.API != APICompletions && p.API != APIEmbeddings {
		v.p.Fail(path+".api", "must be one of chat, completions, embeddings, got %s", strictyaml.Quote(p.API))
	}
	if !(p.Rate > 0) || !finite(p.Rate) {
		v.p.Fail(path+".rate", "must be a finite number > 0, got %s", fmtFloat(p.Rate))
	}
	if !(p.Burstiness > 0) {
		v.p.Fail(path+".burstiness", "must be > 0 (or inf for constant gaps), got %s", fmtFloat(p.Burstiness))
	}
	v.atLeast(path+".max_in_flight", p.MaxInFlight, 1)
	v.positive(path+".timeout", p.Timeout)
	v.request(&p.Request, path+".request")
	v.workload(p, path+".workload")
	v.fingerprint(p, path)
	if r := p.Workload.Random; r != nil && p.API != APIEmbeddings && v.p.Written(path+".request.max_tokens") {
		// probe/workload/random.go draws every request's limit around
		// output_tokens, so max_tokens would be silently unused.
		v.p.Fail(path+".request.max_tokens", "is not used with a random workload, whose output_tokens (%d) sets each request's limit: remove it, got %d", r.OutputTokens, p.Request.MaxTokens)
	}
	for _, s := range []struct {
		name string
		d    *model.Duration
	}{{"ttft", &p.SLO.TTFT}, {"tpot", &p.SLO.TPOT}, {"e2el", &p.SLO.E2EL}, {"ttfa", &p.SLO.TTFA}} {
		if *s.d < 0 {
			v.p.Fail(path+".slo."+s.name, "must be >= 0 (0 = no objective), got %s", *s.d)
		}
	}
	if p.Timeout > 0 && p.Timeout < p.SLO.E2EL {
		// A request slower than the timeout ends client_timeout, so an
		// E2EL objective past it could never fail a request.
		v.p.Fail(path+".timeout", "must be >= slo.e2el (%s), or the E2EL objective can never be judged: raise timeout or lower slo.e2el, got %s", p.SLO.E2EL, p.Timeout)
	}
	v.embeddings(p, path)
	v.quality(&p.Quality, path+".quality")
	v.toolCall(p, path+".quality")
	if !(p.Objective > 0 && p.Objective < 1) {
		v.p.Fail(path+".objective", "must be between 0 and 1 (exclusive), got %s", fmtFloat(p.Objective))
	}
}

func (v *validator) request(r *Request, path string) {
	v.atLeast(path+".max_tokens", r.MaxTokens, 1)
	if !(r.Temperature >= 0) || !finite(r.Temperature) {
		v.p.Fail(path+".temperature", "must be a finite number >= 0, got %s", fmtFloat(r.Temperature))
	}
	if r.Extra != nil {
		r.Extra = jsonValue(r.Extra).(map[string]any)
		if _, err := json.Marshal(r.Extra); err != nil {
			v.p.Fail(path+".extra", "cannot be sent as JSON: %v", err)
		}
	}
	keys := make([]string, 0, len(r.Extra))
	for k := range r.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if slices.Contains(ReservedExtraKeys, k) {
			v.p.Fail(path+".extra."+k, "is set by the prober and cannot be overridden, got %s", strictyaml.Quote(k))
		}
	}
}

// jsonValue turns what yaml decoded into an interface value into what
// encoding/json can write: YAML allows non-string map keys (such as the
// token ids of logit_bias), JSON objects need strings.
func jsonValue(x any) any {
	switch x := x.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonValue(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonValue(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = jsonValue(e)
		}
		return x
	}
	return x
}

func (v *validator) workload(p *Probe, path string) {
	w := &p.Workload
	var kinds []string
	if w.Random != nil {
		kinds = append(kinds, "random")
	}
	if len(w.Prompts) > 0 {
		kinds = append(kinds, "prompts")
	}
	if w.File != "" {
		kinds = append(kinds, "file")
	}
	if len(kinds) != 1 {
		got := "none"
		if len(kinds) > 1 {
			got = strings.Join(kinds, ", ")
		}
		v.p.Fail(path, "exactly one of random, prompts, file must be set, got %s", got)
		return
	}
	switch kinds[0] {
	case "random":
		r := w.Random
		v.atLeast(path+".random.input_tokens", r.InputTokens, 1)
		if p.API != APIEmbeddings {
			v.atLeast(path+".random.output_tokens", r.OutputTokens, 1)
		}
		v.atLeast(path+".random.prefix_tokens", r.PrefixTokens, 0)
		if !(r.RangeRatio >= 0 && r.RangeRatio < 1) {
			v.p.Fail(path+".random.range_ratio", "must be >= 0 and < 1, got %s", fmtFloat(r.RangeRatio))
		}
	case "prompts":
		for i := range w.Prompts {
			v.prompt(&w.Prompts[i], p.API, fmt.Sprintf("%s.prompts[%d]", path, i))
		}
	case "file":
		if abs, ok := v.file(path+".file", w.File, fileread.DatasetLimit); ok {
			w.File = abs
		}
	}
}

func (v *validator) prompt(pr *Prompt, api, path string) {
	switch api {
	case APIChat:
		if len(pr.Messages) == 0 {
			v.p.Fail(path+".messages", "api chat needs messages, got none")
		}
		if pr.Prompt != "" {
			v.p.Fail(path+".prompt", "api chat takes messages, not prompt, got %s", strictyaml.Quote(pr.Prompt))
		}
	case APICompletions, APIEmbeddings:
		if pr.Prompt == "" {
			v.p.Fail(path+".prompt", "api %s needs a non-empty prompt, got \"\"", api)
		}
		if len(pr.Messages) > 0 {
			v.p.Fail(path+".messages", "api %s takes prompt, not messages, got %d messages", api, len(pr.Messages))
		}
	}
	for i, m := range pr.Messages {
		if m.Role == "" {
			v.p.Fail(fmt.Sprintf("%s.messages[%d].role", path, i), "must not be empty, got \"\"")
		}
	}
}

func (v *validator) quality(q *Quality, path string) {
	for i, r := range q.FinishReasons {
		if r == "" {
			v.p.Fail(fmt.Sprintf("%s.finish_reasons[%d]", path, i), "must not be empty, got \"\"")
		}
	}
	v.atLeast(path+".min_output_tokens", q.MinOutputTokens, 0)
	v.atLeast(path+".max_output_tokens", q.MaxOutputTokens, 0)
	if q.MaxOutputTokens > 0 && q.MaxOutputTokens < q.MinOutputTokens {
		v.p.Fail(path+".max_output_tokens", "must be >= min_output_tokens (%d) when set, got %d", q.MinOutputTokens, q.MaxOutputTokens)
	}
	if q.JSONSchema == "" {
		return
	}
	if abs, schema, ok := v.schema(path+".json_schema", q.JSONSchema); ok {
		q.JSONSchema, q.Schema = abs, schema
	}
}

// toolCall checks the tool_call of the probe's quality at qpath and
// compiles its arguments schema. A probe checking tool calls expects the
// finish reason tool_calls too, unless it lists finish_reasons itself.
func (v *validator) toolCall(p *Probe, qpath string) {
	tc := p.Quality.ToolCall
	if tc == nil {
		return
	}
	path := qpath + ".tool_call"
	names := toolNames(p.Request.Extra["tools"])
	switch {
	case p.API != APIChat:
		v.p.Fail(path, "needs api chat (tool calls are a chat feature), got api %s", strictyaml.Quote(p.API))
	case tc.Name == "":
		v.p.Fail(path+".name", "must name the function the answer must call, got \"\"")
	case len(names) == 0:
		v.p.Fail(path, "needs the function offered in request.extra.tools ([{type: function, function: {name: %s, ...}}]), got none", tc.Name)
	case !slices.Contains(names, tc.Name):
		v.p.Fail(path+".name", "must be a function of request.extra.tools (%s), got %s", strings.Join(names, ", "), strictyaml.Quote(tc.Name))
	}
	if !v.p.Written(qpath+".finish_reasons") && !slices.Contains(p.Quality.FinishReasons, "tool_calls") {
		p.Quality.FinishReasons = append(slices.Clone(p.Quality.FinishReasons), "tool_calls")
	}
	if tc.ArgumentsSchema == "" {
		return
	}
	if abs, schema, ok := v.schema(path+".arguments_schema", tc.ArgumentsSchema); ok {
		tc.ArgumentsSchema, tc.Schema = abs, schema
	}
}

// toolNames returns the function names of request.extra.tools in the
// OpenAI format; a server offered none of them never calls one, so a
// tool_call check naming a function not among them could never pass.
func toolNames(tools any) []string {
	list, _ := tools.([]any)
	var names []string
	for _, t := range list {
		tool, _ := t.(map[string]any)
		fn, _ := tool["function"].(map[string]any)
		if name, ok := fn["name"].(string); ok && name != "" {
			names = append(names, name)
		}
	}
	return names
}

// schema reads and compiles the JSON Schema file name (relative to the
// config file) of the key at path.
func (v *validator) schema(path, name string) (string, *jsonschema.Schema, bool) {
	abs, ok := v.file(path, name, fileread.SchemaLimit)
	if !ok {
		return "", nil, false
	}
	schema, err := NewSchemaCompiler().Compile(abs)
	if err != nil {
		msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), abs, filepath.Base(abs))), " ")
		v.p.Fail(path, "invalid JSON Schema: %s, got %s", msg, strictyaml.Quote(name))
		return "", nil, false
	}
	return abs, schema, true
}

// file resolves a path relative to the config file's directory and checks
// that it names an existing regular file. It returns the absolute path,
// or false after reporting a problem.
func (v *validator) file(path, name string, limit int64) (string, bool) {
	if name == "" {
		v.p.Fail(path, "must name a file, got \"\"")
		return "", false
	}
	abs := name
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(v.dir, name)
	}
	st, err := os.Stat(abs)
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe):
		v.p.Fail(path, "cannot read file: %v, got %s", pe.Err, strictyaml.Quote(name))
		return "", false
	case err != nil:
		v.p.Fail(path, "cannot read file: %v, got %s", err, strictyaml.Quote(name))
		return "", false
	case !st.Mode().IsRegular():
		v.p.Fail(path, "must be a regular file, got %s", strictyaml.Quote(name))
		return "", false
	case st.Size() > limit:
		v.p.Fail(path, "must be at most %s, got %s", fileread.Size(limit), strictyaml.Quote(name))
		return "", false
	}
	return abs, true
}
