package voice

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

// TranscribeInput is an uploaded audio file.
type TranscribeInput struct {
	// Audio is read once, up to the end or just past the size limit, and not
	// closed.
	Audio io.Reader
	// Filename is the upload's name; its extension names the format.
	Filename string
	// Language is an optional ISO-639-1 hint such as "en".
	Language string
}

// The audio formats Transcribe accepts, by extension: the family Sniff must
// find in the file, and what the family is called in messages.
var formats = map[string]struct {
	family string
	want   string
}{
	"flac": {"flac", "FLAC audio"},
	"m4a":  {"mp4", "MP4 media"},
	"mp3":  {"mpeg", "MPEG audio"},
	"mp4":  {"mp4", "MP4 media"},
	"mpeg": {"mpeg", "MPEG audio or an MPEG program stream"},
	"mpga": {"mpeg", "MPEG audio"},
	"oga":  {"ogg", "Ogg audio"},
	"ogg":  {"ogg", "Ogg audio"},
	"wav":  {"wav", "WAV audio"},
	"webm": {"webm", "WebM media"},
}

const extensionList = "flac, m4a, mp3, mp4, mpeg, mpga, oga, ogg, wav, webm"

// sniffLen is how much of a file Sniff needs.
const sniffLen = 512

var languagePattern = regexp.MustCompile(`^[a-z]{2}$`)

// Transcribe turns the speech of an audio file into text. The file's
// extension must name a supported format (flac, m4a, mp3, mp4, mpeg, mpga,
// oga, ogg, wav, webm; any case) and its first bytes must look like that
// format. The Transcription's Language is as the provider gave it. Errors:
// invalid (field file: missing or empty; field language: not two lowercase
// letters); unsupported_media_type (unsupported_format for another
// extension, format_mismatch when the content is not what the extension
// says); payload_too_large (audio_too_large) above Config.MaxAudioBytes, also
// when the upload was cut short because of it; the Transcriber's (invalid,
// rate_limited, unavailable, timeout, upstream) pass through; an error
// reading Audio is returned wrapped.
func (s *Service) Transcribe(ctx context.Context, in TranscribeInput) (ports.Transcription, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.Transcription{}, err
	}
	// The tokens a transcription uses are the caller's, for voice.
	ctx = ports.WithAttribution(ctx, ports.Attribution{OrgID: p.OrgID, UserID: p.UserID, Feature: ports.FeatureVoice})
	if in.Audio == nil {
		return ports.Transcription{}, ports.Invalid("an audio file is required", ports.FieldError{Field: "file", Reason: "required"})
	}
	name, ext, err := audioName(in.Filename)
	if err != nil {
		return ports.Transcription{}, err
	}
	if in.Language != "" && !languagePattern.MatchString(in.Language) {
		return ports.Transcription{}, ports.Invalid("invalid language",
			ports.FieldError{Field: "language", Reason: `must be an ISO-639-1 code of two lowercase letters, such as "en"`})
	}

	head := make([]byte, sniffLen)
	n, err := io.ReadFull(in.Audio, head)
	head = head[:n]
	short := err != nil
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return ports.Transcription{}, fmt.Errorf("reading the audio: %w", err)
	}
	switch {
	case n == 0:
		return ports.Transcription{}, ports.Invalid("the audio file is empty", ports.FieldError{Field: "file", Reason: "empty"})
	case int64(n) > s.cfg.MaxAudioBytes:
		return ports.Transcription{}, s.tooLarge()
	}
	if err := checkFormat(ext, head); err != nil {
		return ports.Transcription{}, err
	}

	var rest io.Reader = bytes.NewReader(head)
	if !short {
		rest = io.MultiReader(rest, in.Audio)
	}
	body := &capped{r: rest, max: s.cfg.MaxAudioBytes, err: s.tooLarge()}
	t, err := s.d.Transcriber.Transcribe(ctx, ports.TranscriptionRequest{Audio: body, Filename: name, Language: in.Language})
	if body.over() { // whatever the transcriber made of the upload cut short
		return ports.Transcription{}, body.err
	}
	if err != nil {
		return ports.Transcription{}, err
	}
	return t, nil
}

func (s *Service) tooLarge() *ports.Error {
	return &ports.Error{Kind: ports.KindPayloadTooLarge, Code: CodeAudioTooLarge,
		Message: "the audio file is larger than " + sizeText(s.cfg.MaxAudioBytes)}
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// audioName returns the file's base name with its extension in lower case,
// and the extension. Errors: unsupported_media_type (unsupported_format)
// when the extension is not a supported format's.
func audioName(filename string) (name, ext string, err error) {
	base := filename[strings.LastIndexAny(filename, `/\`)+1:]
	dot := strings.LastIndexByte(base, '.')
	if dot >= 0 {
		ext = strings.ToLower(base[dot+1:])
	}
	if _, ok := formats[ext]; !ok || dot < 0 {
		msg := "the audio file needs a name ending in one of: " + extensionList
		if dot >= 0 && ext != "" {
			msg = fmt.Sprintf("audio files named .%s are not supported; use one of: %s", clipExt(ext), extensionList)
		}
		return "", "", &ports.Error{Kind: ports.KindUnsupportedMedia, Code: CodeUnsupportedFormat, Message: msg}
	}
	stem := base[:dot]
	if stem == "" {
		stem = "audio"
	}
	return stem + "." + ext, ext, nil
}

func clipExt(ext string) string {
	if utf8.RuneCountInString(ext) <= 16 {
		return ext
	}
	return string([]rune(ext)[:16]) + "…"
}

// checkFormat reports, as unsupported_media_type (format_mismatch), a head
// that does not look like the format ext names.
func checkFormat(ext string, head []byte) error {
	f := formats[ext]
	kind := sniff(head)
	family := kind
	if kind == kindProgramStream {
		family = "mpeg"
		if ext != "mpeg" { // mp3 and mpga are audio only
			family = ""
		}
	}
	if family != "" && family == f.family {
		return nil
	}
	return &ports.Error{Kind: ports.KindUnsupportedMedia, Code: CodeFormatMismatch,
		Message: fmt.Sprintf("a .%s file must hold %s, but this one looks like %s", ext, f.want, describe(kind, head))}
}

const kindProgramStream = "mpeg-ps"

var kindNames = map[string]string{
	"wav":             "WAV audio",
	"flac":            "FLAC audio",
	"ogg":             "Ogg audio",
	"webm":            "WebM media",
	"mp4":             "MP4 media",
	"mpeg":            "MPEG audio",
	kindProgramStream: "an MPEG program stream",
}

func describe(kind string, head []byte) string {
	if name, ok := kindNames[kind]; ok {
		return name
	}
	if looksLikeText(head) {
		return "text"
	}
	return "none of the supported audio formats"
}

// Sniff names the audio container the first bytes of a file (512 are
// enough) look like: "wav", "flac", "ogg", "webm", "mp4" or "mpeg" (MPEG
// audio, or an MPEG program stream); "" when none.
func Sniff(head []byte) string {
	if k := sniff(head); k != kindProgramStream {
		return k
	}
	return "mpeg"
}

func sniff(b []byte) string {
	switch {
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WAVE":
		return "wav"
	case bytes.HasPrefix(b, []byte("fLaC")):
		return "flac"
	case bytes.HasPrefix(b, []byte("OggS")):
		return "ogg"
	case bytes.HasPrefix(b, []byte{0x1A, 0x45, 0xDF, 0xA3}):
		return "webm"
	case len(b) >= 8 && string(b[4:8]) == "ftyp":
		return "mp4"
	case bytes.HasPrefix(b, []byte("ID3")), len(b) >= 2 && b[0] == 0xFF && b[1]&0xE0 == 0xE0:
		return "mpeg"
	case bytes.HasPrefix(b, []byte{0x00, 0x00, 0x01, 0xBA}):
		return kindProgramStream
	}
	return ""
}

// looksLikeText reports whether b is UTF-8 without control characters other
// than whitespace; a character cut at the end of b does not count.
func looksLikeText(b []byte) bool {
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.Valid(b); i++ {
		b = b[:len(b)-1]
	}
	if len(b) == 0 || !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if (r < 0x20 && r != '\n' && r != '\r' && r != '\t') || r == 0x7F {
			return false
		}
	}
	return true
}

// capped reads r, counting, and fails with err once more than max bytes have
// been read, reading no more than max+1. The transport may still be reading
// the upload when the transcriber returns, so the count is atomic.
type capped struct {
	r   io.Reader
	max int64
	err error
	n   atomic.Int64
}

func (c *capped) Read(p []byte) (int, error) {
	read := c.n.Load()
	if read > c.max {
		return 0, c.err
	}
	if left := c.max + 1 - read; int64(len(p)) > left {
		p = p[:left]
	}
	k, err := c.r.Read(p)
	if c.n.Add(int64(k)) > c.max {
		return k, c.err
	}
	return k, err
}

// over reports whether more than max bytes were offered.
func (c *capped) over() bool { return c.n.Load() > c.max }
