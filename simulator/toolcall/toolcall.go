// Package toolcall answers the tools and tool_choice of a chat request for
// the simulator: it validates them the way vLLM does, picks the call the
// answer is forced to make, and builds that call's arguments from the
// function's JSON schema.
package toolcall

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/vllm-prober/vllm-prober/simulator/wire"
)

// Error is a refusal of a request's tools or tool_choice, worded as vLLM
// words it.
type Error struct {
	// Validation marks FastAPI's request validation error; otherwise the
	// refusal is vLLM's BadRequestError for the parameter "tools".
	Validation bool
	Message    string
}

func (e *Error) Error() string { return e.Message }

func validationError(format string, args ...any) *Error {
	return &Error{Validation: true, Message: fmt.Sprintf(format, args...)}
}

// toolSpec is one entry of a chat request's `tools`.
type toolSpec struct {
	Type     string `json:"type"`
	Function struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// Call is the call a request forces with tool_choice "required" or a
// named function: the simulator answers it with a call of that function.
type Call struct {
	ID       string // set by the server that answers the call
	Name     string
	Params   json.RawMessage
	Required bool // tool_choice "required": the finish reason is tool_calls
}

// Forced checks tools and tool_choice the way vLLM's request
// validation does and returns the call the answer makes, nil when the
// answer is text (no tools, tool_choice "none" or "auto").
func Forced(rawTools, rawChoice json.RawMessage) (*Call, *Error) {
	var tools []toolSpec
	if len(rawTools) > 0 && string(rawTools) != "null" {
		if err := json.Unmarshal(rawTools, &tools); err != nil {
			return nil, validationError("[{'type': 'list_type', 'loc': ('body', 'tools'), 'msg': 'Input should be a valid list of tools'}]")
		}
		if len(tools) == 0 {
			return nil, toolValueError("`tools` must not be an empty array. Either provide at least one tool or omit the field entirely.")
		}
		for i, t := range tools {
			if t.Function.Name == "" {
				return nil, validationError("[{'type': 'missing', 'loc': ('body', 'tools', %d, 'function', 'name'), 'msg': 'Field required'}]", i)
			}
			if e := checkParameters(i, t.Function.Parameters); e != nil {
				return nil, e
			}
		}
	}
	if len(rawChoice) == 0 || string(rawChoice) == "null" {
		return nil, nil
	}
	var mode string
	if json.Unmarshal(rawChoice, &mode) == nil {
		switch {
		case mode == "none":
			return nil, nil
		case tools == nil:
			return nil, toolValueError("When using `tool_choice`, `tools` must be set.")
		case mode == "auto":
			return nil, nil
		case mode == "required":
			return &Call{Name: tools[0].Function.Name, Params: tools[0].Function.Parameters, Required: true}, nil
		}
		return nil, toolValueError(fmt.Sprintf("Invalid value for `tool_choice`: %s! Only named tools, \"none\", \"auto\" or \"required\" are supported.", mode))
	}
	if tools == nil {
		return nil, toolValueError("When using `tool_choice`, `tools` must be set.")
	}
	return namedTool(tools, rawChoice)
}

// namedTool resolves tool_choice {"type": "function", "function": {"name": ...}}.
func namedTool(tools []toolSpec, rawChoice json.RawMessage) (*Call, *Error) {
	const usage = "Correct usage: `{\"type\": \"function\", \"function\": {\"name\": \"my_function\"}}`"
	var choice struct {
		Function *struct {
			Name *string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(rawChoice, &choice); err != nil || choice.Function == nil {
		return nil, toolValueError("Invalid value for `function` in `tool_choice`! " + usage)
	}
	if choice.Function.Name == nil || *choice.Function.Name == "" {
		return nil, toolValueError("Expected field `name` in `function` in `tool_choice`! " + usage)
	}
	for _, t := range tools {
		if t.Function.Name == *choice.Function.Name {
			return &Call{Name: t.Function.Name, Params: t.Function.Parameters}, nil
		}
	}
	return nil, toolValueError("The tool specified in `tool_choice` does not match any of the specified `tools`")
}

// checkParameters refuses a tool's parameters that are neither null nor
// an object, and a schema whose properties, required or enum keys have
// the wrong JSON type, so arguments are never built from a schema read in
// part.
func checkParameters(i int, raw json.RawMessage) *Error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return validationError("[{'type': 'dict_type', 'loc': ('body', 'tools', %d, 'function', 'parameters'), 'msg': 'Input should be a valid dictionary'}]", i)
	}
	var sc schema
	if err := json.Unmarshal(raw, &sc); err != nil {
		return &Error{Message: fmt.Sprintf("tools[%d].function.parameters is not a usable JSON schema: %s", i, err)}
	}
	return nil
}

// toolValueError is a ValueError of vLLM's tool validation, which FastAPI
// answers as a 400 validation error.
func toolValueError(msg string) *Error {
	return validationError("[{'type': 'value_error', 'loc': ('body',), 'msg': 'Value error, %s'}]", strings.ReplaceAll(msg, "'", `\'`))
}

// schema is the part of a JSON schema the arguments are built from.
type schema struct {
	Type       json.RawMessage   `json:"type"`
	Properties map[string]schema `json:"properties"`
	Required   []string          `json:"required"`
	Enum       []json.RawMessage `json:"enum"`
}

// Arguments returns the JSON arguments of a call of a function with
// the parameters schema params: every required property gets a value of
// its type, in the order `required` lists them, formatted the way Python's
// json.dumps does. seed makes string and number values depend on the
// prompt. bad drops the closing brace, so the arguments are not JSON.
func Arguments(params json.RawMessage, seed string, bad bool) string {
	var sc schema
	if len(params) > 0 {
		// checkParameters refused the schemas that do not decode.
		_ = json.Unmarshal(params, &sc)
	}
	args := objectValue(sc, seed, 0)
	if bad {
		return strings.TrimSuffix(args, "}")
	}
	return args
}

// maxSchemaDepth bounds the nesting of generated objects.
const maxSchemaDepth = 8

func objectValue(sc schema, seed string, depth int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, name := range sc.Required {
		if i > 0 {
			b.WriteString(", ")
		}
		b.Write(wire.Compact(name))
		b.WriteString(": ")
		b.WriteString(propertyValue(sc.Properties[name], seed+"."+name, depth+1))
	}
	b.WriteByte('}')
	return b.String()
}

// valueWords are the values of generated string arguments.
var valueWords = []string{"Paris", "Berlin", "Tokyo", "Lima", "Oslo", "Cairo", "Quito", "Seoul"}

// propertyValue is a value of the property's type derived from seed.
func propertyValue(sc schema, seed string, depth int) string {
	h := fnv.New64a()
	h.Write([]byte(seed))
	n := h.Sum64()
	if len(sc.Enum) > 0 {
		return string(wire.Compact(sc.Enum[n%uint64(len(sc.Enum))]))
	}
	switch schemaType(sc.Type) {
	case "integer":
		return strconv.FormatUint(n%100, 10)
	case "number":
		return strconv.FormatUint(n%100, 10) + ".5"
	case "boolean":
		return strconv.FormatBool(n%2 == 0)
	case "null":
		return "null"
	case "array":
		return "[]"
	case "object":
		if depth >= maxSchemaDepth {
			return "{}"
		}
		return objectValue(sc, seed, depth)
	}
	return string(wire.Compact(valueWords[n%uint64(len(valueWords))]))
}

// schemaType is the schema's type, the first non-null one of a list.
func schemaType(raw json.RawMessage) string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		for _, t := range many {
			if t != "null" {
				return t
			}
		}
	}
	return ""
}
