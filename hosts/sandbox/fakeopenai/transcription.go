package fakeopenai

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
)

// DefaultTranscript is the text of a transcription that finds no scripted
// response.
const DefaultTranscript = "hello from devpilot"

// MaxAudioSize is the largest audio file the transcription endpoint accepts,
// as OpenAI's: 25 MiB. A larger one is answered with a 413.
const MaxAudioSize = 25 << 20

// headSize is how much of an audio file is kept for its WAV header.
const headSize = 4 << 10

// audioFormats are the file extensions OpenAI transcribes.
var audioFormats = []string{"flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm"}

// TranscriptionRequest is one request to POST /v1/audio/transcriptions (or
// Azure's /openai/deployments/{deployment}/audio/transcriptions). Path and
// Header are set for every request; the other fields as far as the
// multipart body could be read.
type TranscriptionRequest struct {
	Path   string
	Header http.Header
	// Fields holds every form field other than the file.
	Fields url.Values

	Model          string
	Language       string
	ResponseFormat string
	Prompt         string

	// Filename and FileContentType are the file part's file name and
	// Content-Type.
	Filename        string
	FileContentType string
	// Size is the file's length, SHA256 the hex SHA-256 of its bytes, and
	// Head its first bytes (up to 64).
	Size   int64
	SHA256 string
	Head   []byte
	// Duration is the length of the audio as the server reports it: from the
	// header of a WAV file, else one second.
	Duration time.Duration
}

// EnqueueTranscription appends responses to the transcription script: each
// transcription request that passes validation consumes the next one. Use
// Text for the transcript (WithLanguage for its language), or an error,
// Hangup or a delay. Without one, the request is transcribed as
// DefaultTranscript.
func (s *Server) EnqueueTranscription(responses ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.transcription = append(s.transcription, responses...)
}

// TranscriptionRequests returns a copy of every transcription request
// received so far, in arrival order (for a NewHandler fake, the newest
// HandlerHistory of them).
func (s *Server) TranscriptionRequests() []TranscriptionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]TranscriptionRequest, len(s.transcriptionReqs))
	copy(out, s.transcriptionReqs)
	return out
}

func (s *Server) handleTranscription(w http.ResponseWriter, r *http.Request) {
	req := TranscriptionRequest{Path: r.URL.Path, Header: r.Header.Clone(), Fields: url.Values{}}
	r.Body = http.MaxBytesReader(w, r.Body, MaxAudioSize+1<<20)
	head, parseErr := readTranscription(r, &req)
	req.Model = req.Fields.Get("model")
	req.Language = req.Fields.Get("language")
	req.ResponseFormat = req.Fields.Get("response_format")
	req.Prompt = req.Fields.Get("prompt")
	if parseErr == nil && req.Filename != "" {
		if d, ok := wavDuration(head, req.Size); ok {
			req.Duration = d
		} else {
			req.Duration = time.Second
		}
	}
	s.mu.Lock()
	s.transcriptionReqs = appendBounded(s, s.transcriptionReqs, req)
	s.mu.Unlock()

	if !authorized(w, r) {
		return
	}
	if _, ok := errors.AsType[*http.MaxBytesError](parseErr); ok || req.Size > MaxAudioSize {
		writeError(w, http.StatusRequestEntityTooLarge, nil, errorBody("invalid_request_error", "",
			fmt.Sprintf("Maximum content size limit (%d) exceeded.", MaxAudioSize)))
		return
	}
	if parseErr != nil {
		invalidRequest(w, "", parseErr.Error())
		return
	}
	if param, msg := validateTranscription(&req); msg != "" {
		invalidRequest(w, param, msg)
		return
	}
	resp, ok := s.next(&s.transcription)
	if !ok {
		resp = Text(DefaultTranscript)
	}
	if !sleep(r.Context(), resp.responseDelay) {
		return
	}
	switch resp.kind {
	case kindHangup:
		panic(http.ErrAbortHandler)
	case kindError:
		writeError(w, resp.status, resp.header, resp.body)
		return
	}
	for k, vs := range resp.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	contentType, body := transcriptionAnswer(&req, resp)
	writeBody(w, contentType, body, resp.faults)
}

// readTranscription reads the multipart body of r into req, and returns the
// first bytes of the file.
func readTranscription(r *http.Request, req *TranscriptionRequest) ([]byte, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		//lint:ignore ST1005 the OpenAI API's own message, which the fake answers with.
		return nil, fmt.Errorf("Invalid Content-Type header (%s), expected multipart/form-data.", r.Header.Get("Content-Type"))
	}
	var head []byte
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return head, nil
		}
		if err != nil {
			return head, fmt.Errorf("could not parse multipart form: %w", err)
		}
		name := part.FormName()
		if name == "file" {
			if req.Filename != "" {
				return head, errors.New("only one file may be sent")
			}
			req.Filename = part.FileName()
			req.FileContentType = part.Header.Get("Content-Type")
			h := sha256.New()
			var first bytes.Buffer
			n, err := io.Copy(io.MultiWriter(h, &capWriter{buf: &first, max: headSize}), part)
			if err != nil {
				return head, fmt.Errorf("could not read the file: %w", err)
			}
			head = first.Bytes()
			req.Size, req.SHA256 = n, hex.EncodeToString(h.Sum(nil))
			req.Head = bytes.Clone(head[:min(len(head), 64)])
			continue
		}
		v, err := io.ReadAll(io.LimitReader(part, 1<<20))
		if err != nil {
			return head, fmt.Errorf("could not read field %s: %w", name, err)
		}
		req.Fields.Add(name, string(v))
	}
}

// capWriter keeps the first max bytes written to it.
type capWriter struct {
	buf *bytes.Buffer
	max int
}

func (c *capWriter) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// validateTranscription checks what OpenAI checks of a transcription
// request. It returns the offending parameter and a message, or "" when the
// request is valid.
func validateTranscription(req *TranscriptionRequest) (param, message string) {
	format := cmp.Or(req.ResponseFormat, "json")
	switch {
	case req.Filename == "":
		return "file", "Missing required parameter: 'file'."
	case req.Model == "":
		return "model", "Missing required parameter: 'model'."
	}
	ext := strings.TrimPrefix(strings.ToLower(path.Ext(req.Filename)), ".")
	if !containsString(audioFormats, ext) {
		return "file", fmt.Sprintf("Invalid file format. Supported formats: ['%s']", strings.Join(audioFormats, "', '"))
	}
	switch {
	case req.Size == 0 || req.Duration < 100*time.Millisecond:
		return "file", "Audio file is too short. Minimum audio length is 0.1 seconds."
	case !containsString([]string{"json", "text", "srt", "verbose_json", "vtt"}, format):
		return "response_format", fmt.Sprintf("Invalid value: '%s'. Supported values are: 'json', 'text', 'srt', 'verbose_json', and 'vtt'.", format)
	case format == "verbose_json" && strings.HasPrefix(req.Model, "gpt-"):
		return "response_format", fmt.Sprintf("response_format 'verbose_json' is not compatible with model '%s'. Use 'json' or 'text' instead.", req.Model)
	}
	if req.Language != "" {
		if _, ok := whisperLanguageNames[req.Language]; !ok {
			return "language", fmt.Sprintf("Invalid language '%s'. Language parameter must be specified in ISO-639-1 format.", req.Language)
		}
	}
	return "", ""
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TranscriptionUsage is the usage a JSON transcription reports, as
// OpenAI's: whisper-1 reports the audio's seconds (rounded up); the GPT
// transcription models report tokens, here ten audio tokens a second of
// audio (rounded up) in and one token per word of the transcript, plus
// one, out.
func TranscriptionUsage(model string, d time.Duration, text string) map[string]any {
	if !strings.HasPrefix(model, "gpt-") {
		return map[string]any{"type": "duration", "seconds": int(math.Ceil(d.Seconds()))}
	}
	in, out := int(math.Ceil(d.Seconds()*10)), len(strings.Fields(text))+1
	return map[string]any{"type": "tokens", "input_tokens": in, "output_tokens": out, "total_tokens": in + out,
		"input_token_details": map[string]any{"text_tokens": 0, "audio_tokens": in}}
}

// transcriptionAnswer is the content type and body of a successful
// transcription in the requested format.
func transcriptionAnswer(req *TranscriptionRequest, resp Response) (string, []byte) {
	text := resp.text
	d := req.Duration
	secs := math.Round(d.Seconds()*1000) / 1000
	format := cmp.Or(req.ResponseFormat, "json")
	switch format {
	case "text":
		return "text/plain; charset=utf-8", []byte(text + "\n")
	case "srt":
		return "text/plain; charset=utf-8", fmt.Appendf(nil, "1\n%s --> %s\n%s\n\n", cueTime(0, ","), cueTime(d, ","), text)
	case "vtt":
		return "text/vtt; charset=utf-8", fmt.Appendf(nil, "WEBVTT\n\n%s --> %s\n%s\n\n", cueTime(0, "."), cueTime(d, "."), text)
	}
	out := map[string]any{"text": text, "usage": TranscriptionUsage(req.Model, d, text)}
	if format == "verbose_json" {
		lang := resp.language
		if lang == "" {
			lang = cmp.Or(whisperLanguageNames[req.Language], "english")
		}
		words := strings.Fields(text)
		tokens := make([]int, len(words))
		for i := range words {
			tokens[i] = 1000 + i
		}
		segments := []map[string]any{}
		if text != "" {
			segments = append(segments, map[string]any{
				"id": 0, "seek": 0, "start": 0.0, "end": secs, "text": " " + text, "tokens": tokens,
				"temperature": 0.0, "avg_logprob": -0.25, "compression_ratio": 1.1, "no_speech_prob": 0.01,
			})
		}
		out = map[string]any{
			"task": "transcribe", "language": lang, "duration": secs, "text": text,
			"segments": segments, "usage": out["usage"],
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		panic(err)
	}
	return "application/json", b
}

// cueTime formats d as a subtitle timestamp, with sep before the
// milliseconds.
func cueTime(d time.Duration, sep string) string {
	ms := d.Milliseconds()
	return fmt.Sprintf("%02d:%02d:%02d%s%03d", ms/3600000, ms/60000%60, ms/1000%60, sep, ms%1000)
}

// whisperLanguageNames maps the ISO-639-1 codes Whisper knows to the names it
// reports in verbose JSON (Cantonese and Hawaiian by their ISO-639-3 codes,
// Javanese by both jv and Whisper's jw).
var whisperLanguageNames = map[string]string{
	"af": "afrikaans", "am": "amharic", "ar": "arabic", "as": "assamese", "az": "azerbaijani",
	"ba": "bashkir", "be": "belarusian", "bg": "bulgarian", "bn": "bengali", "bo": "tibetan",
	"br": "breton", "bs": "bosnian", "ca": "catalan", "cs": "czech", "cy": "welsh",
	"da": "danish", "de": "german", "el": "greek", "en": "english", "es": "spanish",
	"et": "estonian", "eu": "basque", "fa": "persian", "fi": "finnish", "fo": "faroese",
	"fr": "french", "gl": "galician", "gu": "gujarati", "ha": "hausa", "haw": "hawaiian",
	"he": "hebrew", "hi": "hindi", "hr": "croatian", "ht": "haitian creole", "hu": "hungarian",
	"hy": "armenian", "id": "indonesian", "is": "icelandic", "it": "italian", "ja": "japanese",
	"jv": "javanese", "jw": "javanese", "ka": "georgian", "kk": "kazakh", "km": "khmer",
	"kn": "kannada", "ko": "korean", "la": "latin", "lb": "luxembourgish", "ln": "lingala",
	"lo": "lao", "lt": "lithuanian", "lv": "latvian", "mg": "malagasy", "mi": "maori",
	"mk": "macedonian", "ml": "malayalam", "mn": "mongolian", "mr": "marathi", "ms": "malay",
	"mt": "maltese", "my": "myanmar", "ne": "nepali", "nl": "dutch", "nn": "nynorsk",
	"no": "norwegian", "oc": "occitan", "pa": "punjabi", "pl": "polish", "ps": "pashto",
	"pt": "portuguese", "ro": "romanian", "ru": "russian", "sa": "sanskrit", "sd": "sindhi",
	"si": "sinhala", "sk": "slovak", "sl": "slovenian", "sn": "shona", "so": "somali",
	"sq": "albanian", "sr": "serbian", "su": "sundanese", "sv": "swedish", "sw": "swahili",
	"ta": "tamil", "te": "telugu", "tg": "tajik", "th": "thai", "tk": "turkmen",
	"tl": "tagalog", "tr": "turkish", "tt": "tatar", "uk": "ukrainian", "ur": "urdu",
	"uz": "uzbek", "vi": "vietnamese", "yi": "yiddish", "yo": "yoruba", "yue": "cantonese",
	"zh": "chinese",
}
