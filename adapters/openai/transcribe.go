package openai

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/devpilot/devpilot/ports"
)

// maxTranscriptionResponse bounds the response to a transcription read: the
// verbose JSON of the longest audio OpenAI accepts is well under a megabyte.
const maxTranscriptionResponse = 8 << 20

// Transcribe implements ports.Transcriber with the provider's
// /audio/transcriptions: r.Audio is sent as the file r.Filename (the
// provider tells the format by its extension) with r.Language as a hint.
// Whisper models answer verbose JSON, which gives the language (mapped from
// Whisper's name, such as "english", to its ISO-639-1 code) and the
// duration; OpenAI's gpt-* transcription models answer plain JSON, so the
// language is the hint and the duration 0. The call is not tried again and
// is bounded by Config.TranscribeTimeout, reading the audio included (the
// deadline is checked between reads: a Read that blocks is not interrupted).
//
// Errors: invalid (Code invalid_request) for a request without audio or
// file name, audio that cannot be read (the read error is the cause), or
// audio the provider rejects (with its message); payload_too_large when
// reading the audio fails with *http.MaxBytesError; rate_limited (with
// RetryAfter); timeout; upstream for a provider that fails or cannot be
// reached, rejected credentials and a malformed answer; ctx's error when ctx
// ends.
func (c *Client) Transcribe(ctx context.Context, r ports.TranscriptionRequest) (ports.Transcription, error) {
	if r.Audio == nil {
		return ports.Transcription{}, invalidRequest("there is no audio to transcribe")
	}
	if r.Filename == "" {
		return ports.Transcription{}, invalidRequest("the audio file has no name")
	}
	model := cmp.Or(r.Model, c.transcribeModel)
	format := goopenai.AudioResponseFormatVerboseJSON
	if !verboseJSONModel(model) {
		format = goopenai.AudioResponseFormatJSON
	}
	callCtx, cancel := context.WithTimeoutCause(ctx, c.transcribeTimeout, errCallTimeout)
	defer cancel()
	audio := &audioReader{ctx: callCtx, r: r.Audio}
	info := &responseInfo{limit: maxTranscriptionResponse, body: new(bytes.Buffer)}
	resp, err := c.api.CreateTranscription(context.WithValue(callCtx, responseInfoKey{}, info), goopenai.AudioRequest{
		Model:    model,
		FilePath: r.Filename,
		Reader:   audio,
		Language: r.Language,
		Format:   format,
	})
	if err != nil {
		if err := ctx.Err(); err != nil {
			return ports.Transcription{}, err
		}
		if callCtx.Err() != nil {
			return ports.Transcription{}, timeoutAfter(c.transcribeTimeout)
		}
		if audio.err != nil {
			return ports.Transcription{}, audioError(audio.err)
		}
		return ports.Transcription{}, oneShot(c.classifyOnce(err, info))
	}
	return ports.Transcription{
		Text:     strings.TrimSpace(resp.Text),
		Language: cmp.Or(languageCode(resp.Language), r.Language),
		Duration: seconds(resp.Duration),
		Model:    model,
		Usage:    transcriptionUsage(info.body.Bytes()),
	}, nil
}

// transcriptionUsage reads the tokens a transcription's JSON answer reports
// (go-openai does not decode them): the GPT transcription models' usage of
// type tokens; whisper-1's usage in seconds, or none, is zero.
func transcriptionUsage(body []byte) ports.Usage {
	var answer struct {
		Usage struct {
			Type         string `json:"type"`
			InputTokens  int    `json:"input_tokens"`
			OutputTokens int    `json:"output_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(body, &answer) != nil || answer.Usage.Type != "tokens" ||
		answer.Usage.InputTokens < 0 || answer.Usage.OutputTokens < 0 {
		return ports.Usage{}
	}
	return ports.Usage{PromptTokens: answer.Usage.InputTokens, CompletionTokens: answer.Usage.OutputTokens}
}

// verboseJSONModel reports whether model answers verbose_json: Whisper does
// (at OpenAI, on Azure and on local servers), OpenAI's gpt-4o-transcribe
// family does not.
func verboseJSONModel(model string) bool {
	return !strings.HasPrefix(strings.ToLower(model), "gpt-")
}

// seconds converts a duration in seconds as the provider reports it.
func seconds(s float64) time.Duration {
	if math.IsNaN(s) || s <= 0 || s > float64(math.MaxInt64/int64(time.Second)) {
		return 0
	}
	return time.Duration(math.Round(s * float64(time.Second)))
}

// audioReader reads the caller's audio, noting the first error other than
// io.EOF, and stops once ctx ends: go-openai reads the whole file before it
// sends the request, without looking at the context.
type audioReader struct {
	ctx context.Context
	r   io.Reader
	err error
}

func (a *audioReader) Read(p []byte) (int, error) {
	if a.err != nil {
		return 0, a.err
	}
	if err := a.ctx.Err(); err != nil {
		a.err = err
		return 0, err
	}
	n, err := a.r.Read(p)
	if err != nil && err != io.EOF {
		a.err = err
	}
	return n, err
}

// audioError is the error of audio that could not be read.
func audioError(err error) *ports.Error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return ports.Wrap(ports.KindPayloadTooLarge, err, "the audio file is too large")
	}
	return &ports.Error{Kind: ports.KindInvalid, Code: ports.CodeInvalidRequest, Message: "the audio could not be read", Err: err}
}
