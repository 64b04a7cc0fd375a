package scm

import (
	"io"
	"os"

	"github.com/devpilot/devpilot/ports"
)

// spool holds a webhook body while it is read and its signature checked:
// in memory up to a threshold, in a temporary file beyond it, so that an
// unauthenticated sender makes devpilot hold at most the threshold in
// memory. Close removes the file.
type spool struct {
	threshold int
	dir       string
	mem       []byte
	file      *os.File
	size      int64
	buffered  func(n int) // hears len(mem) as it grows; may be nil
}

func newSpool(threshold int, dir string, buffered func(int)) *spool {
	return &spool{threshold: threshold, dir: dir, buffered: buffered}
}

// Write keeps p, in memory while the whole stays within the threshold, else
// in the file (moving what memory held there first).
func (sp *spool) Write(p []byte) (int, error) {
	if sp.file == nil && len(sp.mem)+len(p) <= sp.threshold {
		if need := len(sp.mem) + len(p); need > cap(sp.mem) {
			// Grow by doubling, never past the threshold.
			grown := make([]byte, len(sp.mem), min(max(2*cap(sp.mem), need, 4096), sp.threshold))
			copy(grown, sp.mem)
			sp.mem = grown
		}
		sp.mem = append(sp.mem, p...)
		sp.size += int64(len(p))
		if sp.buffered != nil {
			sp.buffered(len(sp.mem))
		}
		return len(p), nil
	}
	if sp.file == nil {
		f, err := os.CreateTemp(sp.dir, "devpilot-webhook-*")
		if err != nil {
			return 0, ports.Wrap(ports.KindInternal, err, "no temporary file for a webhook body")
		}
		sp.file = f
		if _, err := f.Write(sp.mem); err != nil {
			return 0, ports.Wrap(ports.KindInternal, err, "writing a webhook body to a temporary file")
		}
		sp.mem = nil
	}
	n, err := sp.file.Write(p)
	sp.size += int64(n)
	if err != nil {
		return n, ports.Wrap(ports.KindInternal, err, "writing a webhook body to a temporary file")
	}
	return n, nil
}

// Bytes returns everything written, read back from the file if it spilled.
func (sp *spool) Bytes() ([]byte, error) {
	if sp.file == nil {
		return sp.mem, nil
	}
	b := make([]byte, sp.size)
	if _, err := sp.file.ReadAt(b, 0); err != nil && err != io.EOF {
		return nil, ports.Wrap(ports.KindInternal, err, "reading a webhook body back from its temporary file")
	}
	return b, nil
}

// Close removes the temporary file, if any, and forgets the body.
func (sp *spool) Close() {
	sp.mem = nil
	if sp.file != nil {
		name := sp.file.Name()
		_ = sp.file.Close()
		_ = os.Remove(name)
		sp.file = nil
	}
}
