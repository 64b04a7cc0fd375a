package fakeopenai

import (
	"encoding/binary"
	"testing"
	"time"
)

func TestWAVDuration(t *testing.T) {
	t.Parallel()
	wav := WAV(2*time.Second, 100)
	// withList puts a LIST chunk of odd length (padded) before the data.
	withList := func() []byte {
		b := append([]byte{}, wav[:36]...)
		b = append(b, "LIST"...)
		b = binary.LittleEndian.AppendUint32(b, 3)
		b = append(b, 'a', 'b', 'c', 0)
		b = append(b, wav[36:]...)
		binary.LittleEndian.PutUint32(b[4:], uint32(len(b)-8))
		return b
	}()
	// streamed declares a data chunk of unknown size, as recorders that
	// stream do.
	streamed := append([]byte{}, wav...)
	binary.LittleEndian.PutUint32(streamed[40:], 0xFFFFFFFF)

	tests := []struct {
		name string
		head []byte
		size int64
		want time.Duration
		ok   bool
	}{
		{"plain", wav, int64(len(wav)), 2 * time.Second, true},
		{"head only", wav[:44], int64(len(wav)), 2 * time.Second, true},
		{"chunk before data", withList, int64(len(withList)), 2 * time.Second, true},
		{"streamed", streamed, int64(len(streamed)), 2 * time.Second, true},
		{"cut short", wav[:44], 44 + 16000, 500 * time.Millisecond, true},
		{"not a WAV", []byte("ID3\x04 mp3 data"), 100, 0, false},
		{"no data chunk", wav[:36], 36, 0, false},
		{"empty", nil, 0, 0, false},
	}
	for _, tt := range tests {
		got, ok := wavDuration(tt.head, tt.size)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: %v %v, want %v %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}
