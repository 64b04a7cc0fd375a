package secretbox_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/secretbox"
	"github.com/devpilot/devpilot/ports"
)

func key(t *testing.T) []byte {
	t.Helper()
	k, err := secretbox.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newBox(t *testing.T, keys ...[]byte) *secretbox.Box {
	t.Helper()
	b, err := secretbox.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func kidOf(t *testing.T, sealed string) string {
	t.Helper()
	parts := strings.Split(sealed, ".")
	if len(parts) != 3 || parts[0] != "v1" {
		t.Fatalf("sealed value %q is not v1.<kid>.<body>", sealed)
	}
	return parts[1]
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	b := newBox(t, key(t))
	tests := []struct {
		name       string
		plain, aad []byte
	}{
		{"empty", nil, nil},
		{"short", []byte("s3cr3t"), []byte("record-1")},
		{"binary", []byte{0, 1, 2, 255, 254}, []byte{0}},
		{"large", bytes.Repeat([]byte("x"), 1<<16), []byte("big")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sealed, err := b.Seal(tt.plain, tt.aad)
			if err != nil {
				t.Fatal(err)
			}
			got, err := b.Open(sealed, tt.aad)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.plain) {
				t.Fatalf("Open = %q, want %q", got, tt.plain)
			}
		})
	}
}

// For many random plaintexts: opening inverts sealing, sealing never repeats
// itself (fresh nonces), and the sealed text does not contain the plaintext.
func TestSealProperties(t *testing.T) {
	t.Parallel()
	k := key(t)
	b := newBox(t, k)
	seen := map[string]bool{}
	for i := range 200 {
		plain := key(t)[:i%32+1]
		aad := []byte{byte(i)}
		s1, err := b.Seal(plain, aad)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := b.Seal(plain, aad)
		if err != nil {
			t.Fatal(err)
		}
		if s1 == s2 || seen[s1] {
			t.Fatalf("seal repeated itself: %q", s1)
		}
		seen[s1] = true
		if kidOf(t, s1) != secretbox.KeyID(k) {
			t.Fatalf("kid = %s, want %s", kidOf(t, s1), secretbox.KeyID(k))
		}
		if len(plain) >= 8 && strings.Contains(s1, base64.RawURLEncoding.EncodeToString(plain)) {
			t.Fatalf("sealed value contains the plaintext")
		}
		for _, s := range []string{s1, s2} {
			got, err := b.Open(s, aad)
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("Open = %x, %v; want %x", got, err, plain)
			}
		}
	}
}

func TestRotation(t *testing.T) {
	t.Parallel()
	oldKey, newKey := key(t), key(t)
	aad := []byte("cred-1")
	sealedOld, err := newBox(t, oldKey).Seal([]byte("old secret"), aad)
	if err != nil {
		t.Fatal(err)
	}

	rotated := newBox(t, newKey, oldKey)
	got, err := rotated.Open(sealedOld, aad)
	if err != nil || string(got) != "old secret" {
		t.Fatalf("Open(old) = %q, %v", got, err)
	}
	sealedNew, err := rotated.Seal([]byte("new secret"), aad)
	if err != nil {
		t.Fatal(err)
	}
	if kid := kidOf(t, sealedNew); kid != secretbox.KeyID(newKey) {
		t.Fatalf("new seal kid = %s, want the new key's %s", kid, secretbox.KeyID(newKey))
	}
	if kidOf(t, sealedOld) == kidOf(t, sealedNew) {
		t.Fatal("old and new keys share a kid")
	}

	// Once the old key is dropped, its values no longer open.
	if _, err := newBox(t, newKey).Open(sealedOld, aad); !errors.Is(err, ports.ErrInternal) {
		t.Fatalf("Open(old) without the old key: err = %v, want internal", err)
	}
}

func TestOpenFailures(t *testing.T) {
	t.Parallel()
	k := key(t)
	b := newBox(t, k)
	aad := []byte("record-1")
	sealed, err := b.Seal([]byte("plain"), aad)
	if err != nil {
		t.Fatal(err)
	}
	kid := kidOf(t, sealed)
	body := sealed[len("v1."+kid+"."):]
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) string {
		c := bytes.Clone(raw)
		c[i] ^= 1
		return "v1." + kid + "." + base64.RawURLEncoding.EncodeToString(c)
	}

	tests := []struct {
		name   string
		sealed string
		aad    []byte
	}{
		{"wrong aad", sealed, []byte("record-2")},
		{"missing aad", sealed, nil},
		{"tampered nonce", flip(0), aad},
		{"tampered ciphertext", flip(12), aad},
		{"tampered tag", flip(len(raw) - 1), aad},
		{"truncated", "v1." + kid + "." + base64.RawURLEncoding.EncodeToString(raw[:20]), aad},
		{"unknown kid", "v1." + secretbox.KeyID(key(t)) + "." + body, aad},
		{"other version", "v2." + kid + "." + body, aad},
		{"not base64url", "v1." + kid + ".***", aad},
		{"padded base64", sealed + "==", aad},
		{"no parts", "garbage", aad},
		{"empty", "", aad},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := b.Open(tt.sealed, tt.aad)
			if !errors.Is(err, ports.ErrInternal) {
				t.Fatalf("Open = %q, %v; want an internal error", got, err)
			}
			msg := err.Error()
			for _, secret := range []string{string(k), base64.StdEncoding.EncodeToString(k), "plain"} {
				if strings.Contains(msg, secret) {
					t.Fatalf("error %q leaks key material or plaintext", msg)
				}
			}
		})
	}
}

func TestNewRejectsBadKeys(t *testing.T) {
	t.Parallel()
	k := key(t)
	tests := []struct {
		name string
		keys [][]byte
	}{
		{"none", nil},
		{"short", [][]byte{k[:16]}},
		{"long", [][]byte{append(bytes.Clone(k), 0)}},
		{"second bad", [][]byte{k, k[:31]}},
		{"duplicate", [][]byte{k, bytes.Clone(k)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := secretbox.New(tt.keys...); !errors.Is(err, ports.ErrInternal) {
				t.Fatalf("New: err = %v, want internal", err)
			}
		})
	}
}

func TestParseKeys(t *testing.T) {
	t.Parallel()
	k1, k2 := key(t), key(t)
	e1, e2 := secretbox.EncodeKey(k1), secretbox.EncodeKey(k2)

	t.Run("valid", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			in   string
			want [][]byte
		}{
			{e1, [][]byte{k1}},
			{e1 + "," + e2, [][]byte{k1, k2}},
			{" " + e2 + " , " + e1 + "\n", [][]byte{k2, k1}},
		}
		for _, tt := range tests {
			got, err := secretbox.ParseKeys(tt.in)
			if err != nil {
				t.Fatalf("ParseKeys: %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d keys, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if !bytes.Equal(got[i], tt.want[i]) {
					t.Fatalf("key %d differs", i)
				}
			}
		}
	})

	short := base64.StdEncoding.EncodeToString(k1[:16])
	urlKey := base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32))
	tests := []struct {
		name, in, wantMsg string
	}{
		{"empty", "", "empty"},
		{"blank", "  ", "empty"},
		{"not base64", "not-a-key!", "not standard base64"},
		{"url alphabet", urlKey, "not standard base64"},
		{"short", short, "decodes to 16 bytes, want 32"},
		{"trailing comma", e1 + ",", "key 2 of 2: is empty"},
		{"second bad", e1 + "," + short, "key 2 of 2"},
		{"duplicate", e1 + "," + e1, "repeats"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := secretbox.ParseKeys(tt.in)
			if !errors.Is(err, ports.ErrInvalid) {
				t.Fatalf("err = %v, want invalid", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.wantMsg) {
				t.Fatalf("err = %q, want it to mention %q", msg, tt.wantMsg)
			}
			for _, part := range strings.Split(tt.in, ",") {
				if p := strings.TrimSpace(part); len(p) > 4 && strings.Contains(msg, p) {
					t.Fatalf("err %q echoes the value", msg)
				}
			}
		})
	}
}

func TestLoadOrCreateKeyFile(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data", "keys")
	path := filepath.Join(dir, "secret.key")

	created, err := secretbox.LoadOrCreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(created) != secretbox.KeySize {
		t.Fatalf("key is %d bytes", len(created))
	}
	for p, want := range map[string]os.FileMode{path: 0o600, dir: 0o700} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s mode = %o, want %o", p, got, want)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(data)) != secretbox.EncodeKey(created) {
		t.Fatalf("file holds %q, want the base64 key", data)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want only the key file", len(entries))
	}

	again, err := secretbox.LoadOrCreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, created) {
		t.Fatal("second call returned a different key")
	}
	if _, err := secretbox.New(again); err != nil {
		t.Fatal(err)
	}
}

func TestLoadOrCreateKeyFileReadsExisting(t *testing.T) {
	t.Parallel()
	k := key(t)
	path := filepath.Join(t.TempDir(), "secret.key")
	if err := os.WriteFile(path, []byte(secretbox.EncodeKey(k)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := secretbox.LoadOrCreateKeyFile(path)
	if err != nil || !bytes.Equal(got, k) {
		t.Fatalf("LoadOrCreateKeyFile = %x, %v; want the stored key", got, err)
	}
}

func TestLoadOrCreateKeyFileRejectsBadFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "secret.key")
	if err := os.WriteFile(path, []byte("c2hvcnQ=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := secretbox.LoadOrCreateKeyFile(path); !errors.Is(err, ports.ErrInvalid) {
		t.Fatalf("err = %v, want invalid", err)
	}
	data, err := os.ReadFile(path)
	if err != nil || string(data) != "c2hvcnQ=\n" {
		t.Fatalf("bad key file was overwritten: %q, %v", data, err)
	}
}
