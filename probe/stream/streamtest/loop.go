// Package streamtest holds what benchmarks of the stream reader share.
package streamtest

import "io"

// ChatEvent is one streamed chat chunk exactly as vLLM sends it with
// continuous usage stats: the common event of every probe.
const ChatEvent = `data: {"id":"chatcmpl-a1","object":"chat.completion.chunk","created":1786304610,"model":"granite-4.1-8b",` +
	`"choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null,"token_ids":null}],` +
	`"usage":{"prompt_tokens":26,"total_tokens":27,"completion_tokens":1}}` + "\n\n"

// Loop returns a reader that serves data again and again, never ending and
// without allocating, so that a benchmark measures the reader, not its input.
func Loop(data []byte) io.Reader {
	return &loop{data: data}
}

type loop struct {
	data []byte
	off  int
}

func (l *loop) Read(p []byte) (int, error) {
	n := copy(p, l.data[l.off:])
	l.off = (l.off + n) % len(l.data)
	return n, nil
}
