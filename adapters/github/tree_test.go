package github_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/hosts/sandbox/fakegithub"
	"github.com/devpilot/devpilot/ports"
)

func TestReadTree(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.fake.AddRepo("acme", "api", fakegithub.Private(), fakegithub.VisibleTo("alice"))
	head := r.Commit(fakegithub.Commit{Message: "first", Author: "alice"})
	r.Files(map[string]string{
		"Makefile":                 "test:\n\tgo test ./...\n",
		"cmd/api/main.go":          "package main\n",
		"internal/billing/cart.go": "package billing\n",
	})
	f.fake.AddRepo("acme", "empty", fakegithub.VisibleTo("alice"))
	ctx := context.Background()

	for _, ref := range []string{"", "main", head.SHA} {
		files, truncated, err := f.client.ReadTree(ctx, aliceToken, "acme", "api", ref)
		if err != nil {
			t.Fatalf("ReadTree at %q: %v", ref, err)
		}
		want := []ports.SCMTreeEntry{{Path: "Makefile", Size: 21}, {Path: "cmd/api/main.go", Size: 13}, {Path: "internal/billing/cart.go", Size: 16}}
		if truncated || !slices.Equal(files, want) {
			t.Errorf("ReadTree at %q = %+v, %v; want %+v", ref, files, truncated, want)
		}
	}
	files, _, err := f.client.ReadTree(ctx, aliceToken, "acme", "empty", "")
	if err != nil || files == nil || len(files) != 0 {
		t.Errorf("ReadTree of an empty repository = %v, %v", files, err)
	}
	if _, _, err := f.client.ReadTree(ctx, aliceToken, "acme", "api", "nope"); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("ReadTree at an unknown ref: %v", err)
	}
	if _, _, err := f.client.ReadTree(ctx, bobToken, "acme", "api", ""); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("ReadTree of another user's private repository: %v", err)
	}
	if _, _, err := f.client.ReadTree(ctx, aliceToken, "acme", "api", "a..b"); !errors.Is(err, ports.ErrInvalid) {
		t.Errorf("ReadTree at a malformed ref: %v", err)
	}
	if _, _, err := f.client.ReadTree(ctx, aliceToken, "acme", "api/../x", ""); !errors.Is(err, ports.ErrInvalid) {
		t.Errorf("ReadTree of a malformed repository name: %v", err)
	}
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	long := strings.Repeat("é", 100) // 200 bytes, two per rune
	huge := strings.Repeat("x", 1<<20+1)
	f.fake.AddRepo("acme", "api", fakegithub.VisibleTo("alice")).Files(map[string]string{
		"package.json":      `{"scripts":{"test":"vitest run"}}`,
		"src/long.txt":      long,
		"assets/huge.bin":   huge,
		"src/app/routes.ts": "export const routes = [];\n",
	})
	ctx := context.Background()

	got, err := f.client.ReadFile(ctx, aliceToken, "acme", "api", "", "package.json", 1000)
	if err != nil || got != (ports.SCMFile{Path: "package.json", Content: `{"scripts":{"test":"vitest run"}}`, Size: 33}) {
		t.Errorf("ReadFile = %+v, %v", got, err)
	}
	got, err = f.client.ReadFile(ctx, aliceToken, "acme", "api", "main", "src/long.txt", 51)
	if err != nil || got.Content != long[:50] || !got.Truncated || got.Size != 200 {
		t.Errorf("ReadFile cut at 51 bytes = %q (%d), truncated %v, size %d, %v", got.Content, len(got.Content), got.Truncated, got.Size, err)
	}
	got, err = f.client.ReadFile(ctx, aliceToken, "acme", "api", "", "assets/huge.bin", 100)
	if err != nil || got.Content != "" || !got.Truncated || got.Size != int64(len(huge)) {
		t.Errorf("ReadFile of a file over 1 MB = %d bytes, truncated %v, size %d, %v", len(got.Content), got.Truncated, got.Size, err)
	}
	if _, err := f.client.ReadFile(ctx, aliceToken, "acme", "api", "", "missing.go", 100); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("ReadFile of a missing file: %v", err)
	}
	if _, err := f.client.ReadFile(ctx, aliceToken, "acme", "api", "", "src", 100); !errors.Is(err, ports.ErrInvalid) {
		t.Errorf("ReadFile of a directory: %v", err)
	}
	for _, bad := range []string{"", "/etc/passwd", "../x", "a/../b", "a//b", "a?b"} {
		if _, err := f.client.ReadFile(ctx, aliceToken, "acme", "api", "", bad, 100); !errors.Is(err, ports.ErrInvalid) {
			t.Errorf("ReadFile of %q: %v", bad, err)
		}
	}
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.fake.AddRepo("acme", "site", fakegithub.Private(), fakegithub.VisibleTo("alice")).Grant("alice")
	r.Files(map[string]string{"README.md": "hi\n"})
	ctx := context.Background()
	w := ports.SCMFileWrite{Path: "content/hello.md", Content: "# Hello «world»\n", Message: "Publish hello"}
	url, err := f.client.WriteFile(ctx, aliceToken, "acme", "site", w)
	if err != nil || !strings.HasSuffix(url, "/acme/site/blob/main/content/hello.md") {
		t.Fatalf("WriteFile (create) = %q, %v", url, err)
	}
	if _, err := f.client.WriteFile(ctx, aliceToken, "acme", "site", w); err != nil {
		t.Fatalf("WriteFile (same content) = %v", err)
	}
	w.Content = "# Hello again\n"
	if _, err := f.client.WriteFile(ctx, aliceToken, "acme", "site", w); err != nil {
		t.Fatalf("WriteFile (update) = %v", err)
	}
	commits := r.FileCommits()
	if len(commits) != 2 || commits[0].Message != "Publish hello" || commits[1].Content != "# Hello again\n" {
		t.Errorf("commits %+v, want a create and an update (the same content again makes none)", commits)
	}
	if got, _ := r.File("content/hello.md"); got != "# Hello again\n" {
		t.Errorf("file %q", got)
	}
	if _, err := f.client.WriteFile(ctx, bobToken, "acme", "site", w); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("WriteFile by a user who cannot see the repository: %v", err)
	}
	w.Path = "../x"
	if _, err := f.client.WriteFile(ctx, aliceToken, "acme", "site", w); !errors.Is(err, ports.ErrInvalid) {
		t.Errorf("WriteFile to ../x: %v", err)
	}
}
