package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// imageUser is the user the Dockerfile's run stage runs as.
const imageUser = 65532

// TestContainerImage builds the Dockerfile's run stage and starts
// `devpilot run` from the image's filesystem as the image's user, with the
// image's environment, entrypoint and working directory: it must answer
// /livez and /readyz, and write nothing outside /data.
//
// This machine builds images with podman but can neither pull one nor start
// a container (crun refuses the cgroup setup), so the test builds the binary
// itself (CGO_ENABLED=0, as the build stage does) and stands in for the
// Dockerfile's build stage with a `FROM scratch` stage holding that binary
// and the host's CA bundle; the run stage is the Dockerfile's own text. The
// image's filesystem is exported (podman create + podman export) and the
// entrypoint run in it with chroot(2) and setuid(2): what
// `chroot --userspec=65532:65532 ROOT /devpilot run` does, plus the image's
// WorkingDir. The tree is root's and the process is not root, so it can
// write only where the image lets it; the test also compares the tree
// before and after.
//
// It needs root, podman and tar; without them it skips, or fails when CI is
// set (.ci/run installs podman).
func TestContainerImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and an image (-short)")
	}
	requireImageTools(t)
	t.Parallel()
	// A cold build cache makes the binary's build the longest part: minutes on a
	// busy two-core machine.
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()

	work := t.TempDir()
	buildCtx := filepath.Join(work, "context")
	containerfile := runStageContainerfile(t, filepath.Join("..", "..", "Dockerfile"))
	stageBuildOutput(t, ctx, buildCtx)
	if err := os.WriteFile(filepath.Join(work, "Containerfile"), []byte(containerfile), 0o644); err != nil {
		t.Fatal(err)
	}

	pm := newPodman(t, work)
	const tag = "localhost/devpilot-image-test:latest"
	pm.run(ctx, "build", "--pull=never", "--network=none", "--layers=false",
		"-f", filepath.Join(work, "Containerfile"), "-t", tag, buildCtx)

	cfg := pm.imageConfig(ctx, tag)
	checkImageConfig(t, cfg)

	root := filepath.Join(work, "rootfs")
	pm.exportRootfs(ctx, tag, root)
	checkRootfsOwnership(t, root)
	before := snapshotTree(t, root)

	port := freePort(t)
	env := append(slices.DeleteFunc(slices.Clone(cfg.Env), func(kv string) bool {
		return strings.HasPrefix(kv, "DEVPILOT_HTTP_ADDR=")
	}), "DEVPILOT_HTTP_ADDR=127.0.0.1:"+strconv.Itoa(port))
	logs := runInRootfs(t, root, cfg, env, port)

	after := snapshotTree(t, root)
	for path, was := range before {
		if inData(path) {
			continue
		}
		if now, ok := after[path]; !ok {
			t.Errorf("%s was removed by the run", path)
		} else if now != was {
			t.Errorf("%s changed: %s, now %s", path, was, now)
		}
	}
	var written []string
	for path, now := range after {
		if _, ok := before[path]; !ok && !inData(path) {
			t.Errorf("the run created %s (%s) outside /data", path, now)
		}
		if inData(path) && path != "/data" {
			written = append(written, path)
		}
	}
	for _, want := range []string{"/data/devpilot.db", "/data/secret.key"} {
		if _, ok := after[want]; !ok {
			t.Errorf("the run did not write %s; /data holds %v", want, written)
		}
	}
	if t.Failed() {
		t.Logf("devpilot's output:\n%s", logs)
	}
}

// requireImageTools skips the test unless it runs as root with podman and
// tar, or fails it when CI is set.
func requireImageTools(t *testing.T) {
	t.Helper()
	var missing []string
	for _, tool := range []string{"podman", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		msg := "the container image test needs " + strings.Join(missing, " and ") + " (apt-get install podman)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + ": .ci/run installs podman")
		}
		t.Skip(msg)
	}
	if os.Geteuid() != 0 {
		msg := "the container image test needs root: it runs the image's filesystem with chroot as the image's user"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// runStageContainerfile is a Containerfile of the Dockerfile's run stage,
// as it is, after a `FROM scratch AS build` stage standing in for the
// Dockerfile's: it holds what the test stages in the build context under
// out/ (see stageBuildOutput). The run stage may copy only from the build
// stage and run no RUN step (this machine cannot run one).
func runStageContainerfile(t *testing.T, dockerfile string) string {
	t.Helper()
	data, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	from := regexp.MustCompile(`(?i)^\s*FROM\s`)
	start := slices.IndexFunc(lines, func(l string) bool {
		return regexp.MustCompile(`(?i)^\s*FROM\s+scratch\s+AS\s+run\s*$`).MatchString(l)
	})
	if start < 0 {
		t.Fatalf("%s has no `FROM scratch AS run` stage", dockerfile)
	}
	stage := lines[start:]
	if end := slices.IndexFunc(stage[1:], from.MatchString); end >= 0 {
		t.Fatalf("%s: the run stage must be the last one; another starts after it: %q", dockerfile, stage[end+1])
	}
	copyFrom := regexp.MustCompile(`(?i)--from=(\S+)`)
	for _, l := range stage {
		instr := strings.ToUpper(strings.Fields(l + " #")[0])
		if instr == "RUN" {
			t.Errorf("%s: the run stage has a RUN step (%q): keep it to COPY and metadata", dockerfile, l)
		}
		if m := copyFrom.FindStringSubmatch(l); m != nil && m[1] != "build" {
			t.Errorf("%s: the run stage copies from %q: only the build stage is stood in for", dockerfile, m[1])
		}
	}
	return "# The test's stand-in for the build stage: its output, built by the test.\n" +
		"FROM scratch AS build\nCOPY out/ /out/\n\n" +
		"# The Dockerfile's run stage, as it is.\n" + strings.Join(stage, "\n")
}

// stageBuildOutput lays out in dir/out what the Dockerfile's build stage
// leaves in /out: root/devpilot (built here as the build stage builds it),
// root/etc/ssl/certs/ca-certificates.crt (the host's bundle) and an empty
// owned/data.
func stageBuildOutput(t *testing.T, ctx context.Context, dir string) {
	t.Helper()
	out := filepath.Join(dir, "out")
	certs := filepath.Join(out, "root", "etc", "ssl", "certs")
	data := filepath.Join(out, "owned", "data")
	for _, d := range []string{certs, data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(data, 0o700); err != nil {
		t.Fatal(err)
	}
	bundle, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		t.Fatalf("the host's CA bundle (Debian's ca-certificates): %v", err)
	}
	if err := os.WriteFile(filepath.Join(certs, "ca-certificates.crt"), bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w",
		"-o", filepath.Join(out, "root", "devpilot"), ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, b)
	}
}

// podman runs podman on a store of its own under the test's directory (vfs:
// no overlay or fuse needed, nothing of the machine's images touched).
type podman struct {
	t    *testing.T
	args []string
}

func newPodman(t *testing.T, work string) *podman {
	store := filepath.Join(work, "storage")
	return &podman{t: t, args: []string{
		"--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"),
		"--storage-driver", "vfs", "--cgroup-manager", "cgroupfs", "--events-backend", "none",
	}}
}

// run runs podman with args and returns its standard output; it fails the
// test on an error.
func (p *podman) run(ctx context.Context, args ...string) []byte {
	p.t.Helper()
	cmd := exec.CommandContext(ctx, "podman", append(slices.Clone(p.args), args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		p.t.Fatalf("podman %s: %v\n%s%s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes()
}

// imageConfig is the part of an image's configuration the test checks.
type imageConfig struct {
	User         string
	Env          []string
	Entrypoint   []string
	Cmd          []string
	WorkingDir   string
	Volumes      map[string]struct{}
	ExposedPorts map[string]struct{}
	Labels       map[string]string
}

func (p *podman) imageConfig(ctx context.Context, ref string) imageConfig {
	p.t.Helper()
	var images []struct{ Config imageConfig }
	out := p.run(ctx, "image", "inspect", ref)
	if err := json.Unmarshal(out, &images); err != nil || len(images) != 1 {
		p.t.Fatalf("podman image inspect: %v\n%s", err, out)
	}
	return images[0].Config
}

// exportRootfs unpacks the filesystem of a container of ref (created, never
// started) into root, owners and modes as they are in the image.
func (p *podman) exportRootfs(ctx context.Context, ref, root string) {
	p.t.Helper()
	id := strings.TrimSpace(string(p.run(ctx, "create", "--pull=never", "--network=none", ref)))
	tarball := root + ".tar"
	p.run(ctx, "export", "-o", tarball, id)
	p.run(ctx, "rm", id)
	if err := os.Mkdir(root, 0o755); err != nil {
		p.t.Fatal(err)
	}
	if b, err := exec.CommandContext(ctx, "tar", "--numeric-owner", "--same-permissions", "-xf", tarball, "-C", root).CombinedOutput(); err != nil {
		p.t.Fatalf("tar -x of the exported filesystem: %v\n%s", err, b)
	}
	// The root directory itself is the test's: make it what a container's is.
	if err := os.Chmod(root, 0o755); err != nil {
		p.t.Fatal(err)
	}
}

// checkImageConfig checks what an orchestrator reads of the image: a
// non-root user, the entrypoint and default command, /data as a volume, the
// data directory and HTTP address set for a container, the port.
func checkImageConfig(t *testing.T, cfg imageConfig) {
	t.Helper()
	user := strconv.Itoa(imageUser)
	if cfg.User != user+":"+user {
		t.Errorf("User = %q, want %s:%s (numeric, non-root: runAsNonRoot needs it numeric)", cfg.User, user, user)
	}
	if !slices.Equal(cfg.Entrypoint, []string{"/devpilot"}) {
		t.Errorf("Entrypoint = %q, want [/devpilot]", cfg.Entrypoint)
	}
	if !slices.Equal(cfg.Cmd, []string{"run"}) {
		t.Errorf("Cmd = %q, want [run]: serve, worker and migrate are the same image with another argument", cfg.Cmd)
	}
	if _, ok := cfg.Volumes["/data"]; !ok || len(cfg.Volumes) != 1 {
		t.Errorf("Volumes = %v, want /data only", cfg.Volumes)
	}
	if _, ok := cfg.ExposedPorts["8080/tcp"]; !ok {
		t.Errorf("ExposedPorts = %v, want 8080/tcp among them", cfg.ExposedPorts)
	}
	if cfg.WorkingDir != "/data" {
		t.Errorf("WorkingDir = %q, want /data", cfg.WorkingDir)
	}
	for _, kv := range []string{"DEVPILOT_DATA_DIR=/data", "DEVPILOT_HTTP_ADDR=:8080", "DEVPILOT_WORKER_ADDR=:9091", "TMPDIR=/data"} {
		if !slices.Contains(cfg.Env, kv) {
			t.Errorf("Env = %q, want %s among them", cfg.Env, kv)
		}
	}
	if cfg.Labels["org.opencontainers.image.source"] == "" {
		t.Errorf("Labels = %v, want org.opencontainers.image.source", cfg.Labels)
	}
}

// checkRootfsOwnership checks the image's tree: root's and not writable by
// others, but for /data, the image user's.
func checkRootfsOwnership(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(path)
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		rel := "/" + strings.TrimPrefix(strings.TrimPrefix(path, root), "/")
		switch {
		case rel == "/data":
			if st.Uid != imageUser || st.Gid != imageUser || !info.IsDir() {
				t.Errorf("/data: %v owned by %d:%d, want a directory owned by %d:%d", info.Mode(), st.Uid, st.Gid, imageUser, imageUser)
			}
		case inData(rel):
			t.Errorf("the image has %s in /data: a volume mounted there would hide it", rel)
		case st.Uid != 0 || info.Mode().Perm()&0o002 != 0 && info.Mode()&fs.ModeSymlink == 0:
			t.Errorf("%s: %v owned by %d:%d, want root's and not writable by others", rel, info.Mode(), st.Uid, st.Gid)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// snapshotTree describes every path under root ("/…"): type, mode, owner,
// size and modification time.
func snapshotTree(t *testing.T, root string) map[string]string {
	t.Helper()
	tree := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(path)
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		rel := "/" + strings.TrimPrefix(strings.TrimPrefix(path, root), "/")
		tree[rel] = fmt.Sprintf("%v %d:%d %d bytes, modified %s", info.Mode(), st.Uid, st.Gid, info.Size(),
			info.ModTime().Format(time.RFC3339Nano))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

func inData(path string) bool { return path == "/data" || strings.HasPrefix(path, "/data/") }

// runInRootfs starts the image's entrypoint and command in root as the
// image's user, with env, in the image's working directory, waits until it
// answers /livez and /readyz with 200 on port, and stops it with SIGTERM:
// it must exit 0. It returns the process's output.
func runInRootfs(t *testing.T, root string, cfg imageConfig, env []string, port int) string {
	t.Helper()
	argv := append(slices.Clone(cfg.Entrypoint), cfg.Cmd...)
	uid, gid := parseUser(t, cfg.User)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = cfg.WorkingDir
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Chroot:     root,
		Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}},
		Setpgid:    true,
	}
	var output lockedBuffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %q in the image's filesystem: %v", argv, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	defer func() {
		if !stopped {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}()

	base := "http://127.0.0.1:" + strconv.Itoa(port)
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(2 * time.Minute)
	for _, probe := range []string{"/livez", "/readyz"} {
		for {
			code, body := probeGet(client, base+probe)
			if code == http.StatusOK {
				break
			}
			select {
			case err := <-exited:
				stopped = true
				t.Fatalf("%q exited before %s answered 200: %v\n%s", argv, probe, err, output.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d %s, not 200 within 2 minutes\n%s", probe, code, body, output.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// Stopped as soon as it is ready, as an orchestrator may: SIGTERM is
	// handled from before the start (it once killed a run still starting).
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Errorf("%q after SIGTERM: %v, want exit status 0\n%s", argv, err, output.String())
		}
	case <-time.After(time.Minute):
		t.Errorf("%q did not exit within a minute of SIGTERM\n%s", argv, output.String())
	}
	return output.String()
}

// probeGet is a GET of url: its status code and the start of its body (0
// and the error when there is no answer).
func probeGet(client *http.Client, url string) (int, string) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// parseUser reads the image's numeric USER uid:gid.
func parseUser(t *testing.T, user string) (uint32, uint32) {
	t.Helper()
	u, g, _ := strings.Cut(user, ":")
	uid, err1 := strconv.ParseUint(u, 10, 32)
	gid, err2 := strconv.ParseUint(g, 10, 32)
	if err1 != nil || err2 != nil {
		t.Fatalf("the image's User %q is not numeric uid:gid", user)
	}
	return uint32(uid), uint32(gid)
}

// freePort is a TCP port on loopback nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// lockedBuffer collects a process's output, written from two streams.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
