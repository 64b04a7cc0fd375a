package fakeopenai

import (
	"bytes"
	"encoding/binary"
	"math"
	"time"
)

// WAV sample format of the audio WAV makes.
const (
	wavRate     = 16000
	wavChannels = 1
	wavBits     = 16
)

// WAV returns a WAV file of d of a sine tone at hz: 16 kHz mono 16-bit PCM,
// at half of full scale. It is test audio for the transcription endpoint,
// which reports the duration of a WAV from its header.
func WAV(d time.Duration, hz float64) []byte {
	n := int(math.Round(d.Seconds() * wavRate))
	n = max(n, 0)
	dataSize := n * wavChannels * wavBits / 8
	var b bytes.Buffer
	b.Grow(44 + dataSize)
	le := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	le(uint32(36 + dataSize))
	b.WriteString("WAVE")
	b.WriteString("fmt ")
	le(uint32(16)) // the fmt chunk's size
	le(uint16(1))  // PCM
	le(uint16(wavChannels))
	le(uint32(wavRate))
	le(uint32(wavRate * wavChannels * wavBits / 8)) // byte rate
	le(uint16(wavChannels * wavBits / 8))           // block align
	le(uint16(wavBits))
	b.WriteString("data")
	le(uint32(dataSize))
	samples := make([]int16, n)
	for i := range samples {
		samples[i] = int16(math.Round(0.5 * math.MaxInt16 * math.Sin(2*math.Pi*hz*float64(i)/wavRate)))
	}
	le(samples)
	return b.Bytes()
}

// wavDuration reads the length of the audio of a WAV file from head, its
// first bytes, and size, the file's size: the data chunk's bytes (no more
// than the file holds) over the byte rate of its fmt chunk. It reports false
// when head is not the start of a WAV file with both chunks.
func wavDuration(head []byte, size int64) (time.Duration, bool) {
	if len(head) < 12 || string(head[:4]) != "RIFF" || string(head[8:12]) != "WAVE" {
		return 0, false
	}
	var byteRate uint32
	for pos := 12; pos+8 <= len(head); {
		id := string(head[pos : pos+4])
		n := binary.LittleEndian.Uint32(head[pos+4 : pos+8])
		body := pos + 8
		switch id {
		case "fmt ":
			if body+12 > len(head) {
				return 0, false
			}
			byteRate = binary.LittleEndian.Uint32(head[body+8 : body+12])
		case "data":
			if byteRate == 0 {
				return 0, false
			}
			data := min(int64(n), size-int64(body))
			if data < 0 {
				data = 0
			}
			return time.Duration(float64(data) / float64(byteRate) * float64(time.Second)), true
		}
		pos = body + int(n) + int(n&1)
		if pos < body { // overflow
			return 0, false
		}
	}
	return 0, false
}
