package openai

import (
	"encoding/json"
	"reflect"
	"testing"
)

// chunkSeeds are chunks as servers send them, and some they might.
var chunkSeeds = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732600000,"model":"gpt-4o-mini","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732600000,"model":"gpt-4o-mini","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","service_tier":"default","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":"line\nnext \"quoted\" \u00e9t\u00e9 caf\u00e9 \/ \\ \t"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"abc"}`,
	`{"id":"c","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}`,
	`{"id":"c","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"accepted_prediction_tokens":0}}}`,
	`{"id":"c","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"list_repos","arguments":""}}],"refusal":null},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"project_id\": \"p-1\"}"}}]},"finish_reason":null}]}`,
	`{"id":"c","choices":[{"index":1,"delta":{"refusal":"no"},"finish_reason":"content_filter","content_filter_results":{"hate":{"filtered":true,"severity":"high"}}}],"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]}`,
	`{"choices":[{"delta":{"content":"x"},"index":0,"finish_reason":null,"extra":[1,-2.5e+3,true,false,null,{"a":[]}]}]}`,
	` { "model" : "m" , "choices" : [ { "index" : 0 , "delta" : { "content" : "spaced" } } ] } `,
	`{"choices":null,"usage":{}}`,
	`{"Model":"m"}`,
	`{"model":"a","model":"b"}`,
	`{"choices":[{"delta":{"content":"a"},"delta":{"refusal":"b"}}]}`,
	`{"choices":[{"index":1.0}]}`,
	`{"choices":[{"index":"0"}]}`,
	`{"choices":[null]}`,
	`{"model":"\ud83d\ude00"}`,
	`{"model":"\ud83d"}`,
	`{"model":"` + "\xff" + `"}`,
	`{"mod\u0065l":"m"}`,
	`{"model":"m"`,
	`{"choices":[{"index":0,"delta":{"content":"a"}}]} x`,
	`null`,
	`{"choices":[{"index":01}]}`,
	`{"usage":{"prompt_tokens":99999999999999999999}}`,
	`{"choices":[{"index":-0,"delta":{"content":"\u0000"}}]}`,
	`{"x":nul}`,
	`{"x":[1,]}`,
	`{"x":"tab	inside"}`,
}

// decodeChunk gives what encoding/json gives, value and error kind, for
// every input; on the chunks servers send the scanner of its own answers.
func TestDecodeChunkAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, in := range chunkSeeds {
		checkChunk(t, []byte(in))
	}
}

// The usual chunks do not fall back to encoding/json.
func TestFastChunkReadsTheUsualChunks(t *testing.T) {
	t.Parallel()
	for _, in := range chunkSeeds[:11] {
		var c chunk
		if !fastChunk([]byte(in), &c) {
			t.Errorf("fastChunk declined %s", in)
		}
	}
}

func FuzzDecodeChunk(f *testing.F) {
	for _, in := range chunkSeeds {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkChunk(t, data) })
}

func checkChunk(t *testing.T, data []byte) {
	t.Helper()
	var want chunk
	wantErr := json.Unmarshal(data, &want)
	var got chunk
	err := decodeChunk(data, &got)
	if (err == nil) != (wantErr == nil) || (err != nil && reflect.TypeOf(err) != reflect.TypeOf(wantErr)) {
		t.Fatalf("%q: error %v, encoding/json says %v", data, err, wantErr)
	}
	if wantErr != nil {
		return
	}
	if !reflect.DeepEqual(normal(got), normal(want)) {
		t.Fatalf("%q:\n got %+v\nwant %+v", data, got, want)
	}
	var fast chunk
	if fastChunk(data, &fast) && !reflect.DeepEqual(normal(fast), normal(want)) {
		t.Fatalf("%q: fastChunk\n got %+v\nwant %+v", data, fast, want)
	}
}

// normal makes empty slices nil: the adapter only ranges over them.
func normal(c chunk) chunk {
	if len(c.Choices) == 0 {
		c.Choices = nil
	}
	for i := range c.Choices {
		if len(c.Choices[i].Delta.ToolCalls) == 0 {
			c.Choices[i].Delta.ToolCalls = nil
		}
	}
	return c
}

func BenchmarkDecodeChunk(b *testing.B) {
	data := []byte(chunkSeeds[1])
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c chunk
			if err := decodeChunk(data, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c chunk
			if err := json.Unmarshal(data, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
