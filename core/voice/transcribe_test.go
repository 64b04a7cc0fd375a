package voice_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/voice"
	"github.com/devpilot/devpilot/ports"
)

// wav builds a real 16 kHz mono 16-bit PCM WAV file of a 440 Hz tone.
func wav(samples int) []byte {
	const rate = 16000
	var b bytes.Buffer
	le := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	le(uint32(36 + 2*samples))
	b.WriteString("WAVE")
	b.WriteString("fmt ")
	le(uint32(16))
	le(uint16(1)) // PCM
	le(uint16(1)) // mono
	le(uint32(rate))
	le(uint32(2 * rate)) // bytes per second
	le(uint16(2))        // block align
	le(uint16(16))       // bits per sample
	b.WriteString("data")
	le(uint32(2 * samples))
	for i := range samples {
		le(int16(math.Sin(2*math.Pi*440*float64(i)/rate) * 8000))
	}
	return b.Bytes()
}

// withBody pads a header with a little content.
func withBody(head ...[]byte) []byte {
	b := bytes.Join(head, nil)
	return append(b, bytes.Repeat([]byte{0x11, 0x22, 0x33}, 100)...)
}

var (
	flacFile = withBody([]byte("fLaC"), []byte{0x00, 0x00, 0x00, 0x22})
	oggFile  = withBody([]byte("OggS"), []byte{0x00, 0x02})
	webmFile = withBody([]byte{0x1A, 0x45, 0xDF, 0xA3, 0x9F, 0x42, 0x86, 0x81, 0x01}, []byte("webm"))
	mp4File  = withBody([]byte{0x00, 0x00, 0x00, 0x20}, []byte("ftypisom"))
	m4aFile  = withBody([]byte{0x00, 0x00, 0x00, 0x1C}, []byte("ftypM4A "))
	id3File  = withBody([]byte("ID3"), []byte{0x04, 0x00, 0x00})
	syncFile = withBody([]byte{0xFF, 0xFB, 0x90, 0x64})
	psFile   = withBody([]byte{0x00, 0x00, 0x01, 0xBA, 0x44})
	textFile = []byte("Meeting notes: ship the voice feature on Friday.\nOwner: Alice.\n")
)

func TestSniff(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		head []byte
		want string
	}{
		{"wav", wav(100), "wav"},
		{"flac", flacFile, "flac"},
		{"ogg", oggFile, "ogg"},
		{"webm", webmFile, "webm"},
		{"mp4", mp4File, "mp4"},
		{"m4a", m4aFile, "mp4"},
		{"id3", id3File, "mpeg"},
		{"frame sync", syncFile, "mpeg"},
		{"program stream", psFile, "mpeg"},
		{"text", textFile, ""},
		{"riff but not wave", withBody([]byte("RIFF\x00\x00\x00\x00AVI ")), ""},
		{"0xFF alone", []byte{0xFF}, ""},
		{"0xFF without sync", []byte{0xFF, 0x1F}, ""},
		{"too short for ftyp", []byte{0, 0, 0, 0, 'f', 't'}, ""},
		{"nothing", nil, ""},
	}
	for _, c := range cases {
		if got := voice.Sniff(c.head); got != c.want {
			t.Errorf("%s: Sniff = %q, want %q", c.name, got, c.want)
		}
	}
}

// expectTranscribe expects one call, which reads the whole upload, checks it
// is file, and answers with the transcription.
func (e *env) expectTranscribe(file []byte, filename, language string) {
	e.transcriber.EXPECT().Transcribe(gomock.Any(), gomock.Any()).Times(1).DoAndReturn(
		func(_ context.Context, r ports.TranscriptionRequest) (ports.Transcription, error) {
			got, err := io.ReadAll(r.Audio)
			if err != nil {
				return ports.Transcription{}, err
			}
			if !bytes.Equal(got, file) {
				e.t.Errorf("the transcriber read %d bytes, not the %d of the file", len(got), len(file))
			}
			if r.Filename != filename || r.Language != language || r.Model != "" {
				e.t.Errorf("request %+v", r)
			}
			return ports.Transcription{Text: "hello", Language: "english", Duration: 1500 * time.Millisecond}, nil
		})
}

func TestTranscribeFormats(t *testing.T) {
	t.Parallel()
	cases := []struct {
		filename, sent string
		file           []byte
	}{
		{"memo.wav", "memo.wav", wav(16000)},
		{"tiny.wav", "tiny.wav", wav(1)},
		{"memo.flac", "memo.flac", flacFile},
		{"memo.ogg", "memo.ogg", oggFile},
		{"memo.oga", "memo.oga", oggFile},
		{"memo.webm", "memo.webm", webmFile},
		{"memo.mp4", "memo.mp4", mp4File},
		{"memo.m4a", "memo.m4a", m4aFile},
		{"memo.mp3", "memo.mp3", id3File},
		{"memo.mp3", "memo.mp3", syncFile},
		{"memo.mpga", "memo.mpga", syncFile},
		{"memo.mpeg", "memo.mpeg", id3File},
		{"memo.mpeg", "memo.mpeg", psFile},
		{"MEMO.WAV", "MEMO.wav", wav(100)},
		{`C:\Users\alice\memo.Mp3`, "memo.mp3", id3File},
		{".m4a", "audio.m4a", m4aFile},
	}
	for _, c := range cases {
		t.Run(c.filename, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, voice.Config{})
			e.expectTranscribe(c.file, c.sent, "")
			got, err := e.svc.Transcribe(as(alice), voice.TranscribeInput{Audio: bytes.NewReader(c.file), Filename: c.filename})
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != "hello" || got.Language != "english" || got.Duration != 1500*time.Millisecond {
				t.Errorf("transcription %+v", got)
			}
		})
	}
}

func TestTranscribeReadsInSmallPieces(t *testing.T) {
	t.Parallel()
	e := newEnv(t, voice.Config{})
	file := wav(4000)
	e.expectTranscribe(file, "memo.wav", "fr")
	if _, err := e.svc.Transcribe(as(alice), voice.TranscribeInput{Audio: iotest.OneByteReader(bytes.NewReader(file)),
		Filename: "memo.wav", Language: "fr"}); err != nil {
		t.Fatal(err)
	}
}

func TestTranscribeRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		in         voice.TranscribeInput
		kind       ports.Kind
		code       string
		field      string
		messageHas []string
	}{
		{"no file", voice.TranscribeInput{Filename: "memo.wav"}, ports.KindInvalid, "invalid", "file", nil},
		{"no name", voice.TranscribeInput{Audio: bytes.NewReader(wav(10))}, ports.KindUnsupportedMedia, "unsupported_format", "",
			[]string{"flac, m4a, mp3"}},
		{"no extension", voice.TranscribeInput{Audio: bytes.NewReader(wav(10)), Filename: "memo"}, ports.KindUnsupportedMedia, "unsupported_format", "", nil},
		{"other extension", voice.TranscribeInput{Audio: bytes.NewReader(textFile), Filename: "notes.txt"}, ports.KindUnsupportedMedia, "unsupported_format", "",
			[]string{".txt"}},
		{"aac", voice.TranscribeInput{Audio: bytes.NewReader(syncFile), Filename: "memo.aac"}, ports.KindUnsupportedMedia, "unsupported_format", "", nil},
		{"text renamed mp3", voice.TranscribeInput{Audio: bytes.NewReader(textFile), Filename: "notes.mp3"}, ports.KindUnsupportedMedia, "format_mismatch", "",
			[]string{".mp3", "MPEG audio", "text"}},
		{"binary renamed wav", voice.TranscribeInput{Audio: bytes.NewReader([]byte{0, 1, 2, 3, 0xFE, 0x80}), Filename: "memo.wav"}, ports.KindUnsupportedMedia,
			"format_mismatch", "", []string{".wav", "none of the supported audio formats"}},
		{"mp4 named mp3", voice.TranscribeInput{Audio: bytes.NewReader(mp4File), Filename: "memo.mp3"}, ports.KindUnsupportedMedia, "format_mismatch", "",
			[]string{".mp3", "MP4 media"}},
		{"program stream named mp3", voice.TranscribeInput{Audio: bytes.NewReader(psFile), Filename: "memo.mp3"}, ports.KindUnsupportedMedia, "format_mismatch", "",
			[]string{"an MPEG program stream"}},
		{"ogg named webm", voice.TranscribeInput{Audio: bytes.NewReader(oggFile), Filename: "memo.webm"}, ports.KindUnsupportedMedia, "format_mismatch", "",
			[]string{".webm", "Ogg audio"}},
		{"webm named m4a", voice.TranscribeInput{Audio: bytes.NewReader(webmFile), Filename: "memo.m4a"}, ports.KindUnsupportedMedia, "format_mismatch", "", nil},
		{"wav named flac", voice.TranscribeInput{Audio: bytes.NewReader(wav(10)), Filename: "memo.flac"}, ports.KindUnsupportedMedia, "format_mismatch", "",
			[]string{"WAV audio"}},
		{"empty", voice.TranscribeInput{Audio: bytes.NewReader(nil), Filename: "memo.wav"}, ports.KindInvalid, "invalid", "file", nil},
		{"upper-case language", voice.TranscribeInput{Audio: bytes.NewReader(wav(10)), Filename: "memo.wav", Language: "EN"}, ports.KindInvalid, "invalid", "language", nil},
		{"three-letter language", voice.TranscribeInput{Audio: bytes.NewReader(wav(10)), Filename: "memo.wav", Language: "eng"}, ports.KindInvalid, "invalid", "language", nil},
		{"language with a region", voice.TranscribeInput{Audio: bytes.NewReader(wav(10)), Filename: "memo.wav", Language: "en-US"}, ports.KindInvalid, "invalid", "language", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, voice.Config{}) // the transcriber expects no call
			_, err := e.svc.Transcribe(as(alice), c.in)
			if ports.KindOf(err) != c.kind || errCode(err) != c.code {
				t.Fatalf("err %v (%s, %s), want %s, %s", err, ports.KindOf(err), errCode(err), c.kind, c.code)
			}
			if c.field != "" {
				if fs := fields(err); len(fs) != 1 || fs[0].Field != c.field {
					t.Errorf("fields %+v, want %s", fs, c.field)
				}
			}
			for _, s := range c.messageHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message %q does not mention %q", err.Error(), s)
				}
			}
		})
	}
}

func TestTranscribeEmptyFileReason(t *testing.T) {
	t.Parallel()
	e := newEnv(t, voice.Config{})
	_, err := e.svc.Transcribe(as(alice), voice.TranscribeInput{Audio: strings.NewReader(""), Filename: "memo.ogg"})
	if fs := fields(err); len(fs) != 1 || fs[0] != (ports.FieldError{Field: "file", Reason: "empty"}) {
		t.Fatalf("err %v fields %+v", err, fs)
	}
}

// countingReader counts what was read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += k
	return k, err
}

func TestTranscribeTooLarge(t *testing.T) {
	t.Parallel()
	const limit = 2000
	tooLarge := func(t *testing.T, err error) {
		t.Helper()
		if ports.KindOf(err) != ports.KindPayloadTooLarge || errCode(err) != "audio_too_large" {
			t.Fatalf("err %v, want payload_too_large (audio_too_large)", err)
		}
	}

	t.Run("the transcriber passes the read error on", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, voice.Config{MaxAudioBytes: limit})
		src := &countingReader{r: bytes.NewReader(wav(5000))}
		e.transcriber.EXPECT().Transcribe(gomock.Any(), gomock.Any()).DoAndReturn(
			func(_ context.Context, r ports.TranscriptionRequest) (ports.Transcription, error) {
				_, err := io.ReadAll(r.Audio)
				return ports.Transcription{}, err
			})
		_, err := e.svc.Transcribe(as(alice), voice.TranscribeInput{Audio: src, Filename: "memo.wav"})
		tooLarge(t, err)
		if src.n > limit+1 {
			t.Errorf("read %d bytes of the upload, want at most %d", src.n, limit+1)
		}
	})
	t.Run("the transcriber fails otherwise", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, voice.Config{MaxAudioBytes: limit})
		e.transcriber.EXPECT().Transcribe(gomock.Any(), gomock.Any()).DoAndReturn(
			func(_ context.Context, r ports.TranscriptionRequest) (ports.Transcription, error) {
				_, _ = io.Copy(io.Discard, r.Audio)
				return ports.Transcription{}, ports.Errorf(ports.KindUpstream, "the provider hung up")
			})
		_, err := e.svc.Transcribe(as(alice), voice.TranscribeInput{Audio: bytes.NewReader(wav(5000)), Filename: "memo.wav"})
		tooLarge(t, err)
	})
	t.Run("the transcriber ignores the error", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, voice.Config{MaxAudioBytes: limit})
		e.transcriber.EXPECT().Transcribe(gomock.Any(), gomock.Any()).DoAndReturn(
			func(_ context.Context, r ports.TranscriptionRequest) (ports.Transcription, error) {
				_, _ = io.Copy(io.Discard, r.Audio)
				return ports.Transcription{Text: "half"}, nil
			})
		_, err := e.svc.Transcribe(as(alice), voice.TranscribeInput{Audio: bytes.NewReader(wav(5000)), Filename: "memo.wav"})
		tooLarge(t, err)
	})
	t.Run("larger than the limit within the first bytes", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, voice.Config{MaxAudioBytes: 100}) // the transcriber expects no call
		_, err := e.svc.Transcribe(as(alice), voice.TranscribeInput{Audio: bytes.NewReader(wav(200)), Filename: "memo.wav"})
		tooLarge(t, err)
	})
	t.Run("exactly the limit", func(t *testing.T) {
		t.Parallel()
		file := wav((limit - 44) / 2)
		if len(file) != limit {
			t.Fatalf("file of %d bytes", len(file))
		}
		e := newEnv(t, voice.Config{MaxAudioBytes: limit})
		e.expectTranscribe(file, "memo.wav", "")
		if _, err := e.svc.Transcribe(as(alice), voice.TranscribeInput{Audio: bytes.NewReader(file), Filename: "memo.wav"}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestTranscribeErrorsPassThrough(t *testing.T) {
	t.Parallel()
	e := newEnv(t, voice.Config{})
	limited := &ports.Error{Kind: ports.KindRateLimited, Message: "slow down", RetryAfter: time.Second}
	e.transcriber.EXPECT().Transcribe(gomock.Any(), gomock.Any()).Return(ports.Transcription{}, limited)
	_, err := e.svc.Transcribe(as(alice), voice.TranscribeInput{Audio: bytes.NewReader(flacFile), Filename: "memo.flac", Language: "de"})
	if err != limited {
		t.Fatalf("err %v, want the transcriber's", err)
	}
}

func TestTranscribeReadError(t *testing.T) {
	t.Parallel()
	e := newEnv(t, voice.Config{})
	cut := errors.New("connection reset")
	_, err := e.svc.Transcribe(as(alice), voice.TranscribeInput{Audio: iotest.ErrReader(cut), Filename: "memo.wav"})
	if !errors.Is(err, cut) {
		t.Fatalf("err %v, want the read error", err)
	}
}

func TestTranscribeNeedsPrincipal(t *testing.T) {
	t.Parallel()
	e := newEnv(t, voice.Config{})
	_, err := e.svc.Transcribe(context.Background(), voice.TranscribeInput{Audio: bytes.NewReader(wav(10)), Filename: "memo.wav"})
	if !errors.Is(err, ports.ErrUnauthenticated) {
		t.Fatalf("err %v", err)
	}
}
