package kube

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/campaign"
	"github.com/joulebench/joulebench/internal/kubeconf"
)

// maxArchiveBytes bounds the copy of one archive (a pod cannot fill the
// sweep's disk).
const maxArchiveBytes = 8 << 30

// fetch copies an attempt's archive out of its pod into OUT/runs/<attempt>:
// the size of the packed archive first, then its bytes; a copy shorter or
// longer than the size, a tar stream that does not parse, or an archive
// the reader refuses (a complete run must load whole) is an error, and
// nothing lands in OUT/runs. The copy goes to a temporary directory
// beside it and is renamed into place once verified.
func (e *Executor) fetch(ctx context.Context, c *campaign.Campaign, t *tracked, pod string, o campaign.Options) error {
	ns := c.Kubernetes.NamespaceName()
	var size bytes.Buffer
	// Line 1: the run's exit status and OOM kills; line 2: "none" (no
	// archive directory) or the packed archive's size.
	script := "cat " + StateDir + "/exit; if [ ! -d " + WorkDir + "/runs/" + t.attempt + " ]; then echo none; exit 0; fi; " +
		"test ! -s " + StateDir + "/tar.err && wc -c < " + StateDir + "/archive.tar"
	sctx, cancel := campaign.CallContext(ctx)
	defer cancel()
	if err := e.Exec(sctx, ns, pod, ContainerName, []string{"sh", "-c", script}, &size); err != nil {
		var msg bytes.Buffer
		_ = e.Exec(sctx, ns, pod, ContainerName, []string{"cat", StateDir + "/tar.err"}, &msg)
		return fmt.Errorf("the pod could not pack the archive: %v %s", err, strings.TrimSpace(msg.String()))
	}
	status, sizeLine, _ := strings.Cut(strings.TrimSpace(size.String()), "\n")
	ex := parseExit(status)
	if strings.TrimSpace(sizeLine) == "none" {
		return &noArchiveError{exit: ex}
	}
	want, err := strconv.ParseInt(strings.TrimSpace(sizeLine), 10, 64)
	if err != nil || want <= 0 || want > maxArchiveBytes {
		return fmt.Errorf("packed archive size %q: not a size in 1..%d bytes", strings.TrimSpace(sizeLine), int64(maxArchiveBytes))
	}
	tmp, err := os.MkdirTemp(c.RunsDir(), "."+t.attempt+".copy-")
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	defer os.RemoveAll(tmp)
	// The copy is bounded too: at least 1 MiB/s after the call's bound.
	cctx, ccancel := context.WithTimeout(ctx, campaign.BackendCallTimeout+time.Duration(want>>20)*time.Second)
	defer ccancel()
	if err := e.stream(cctx, ns, pod, StateDir+"/archive.tar", want, tmp, t.attempt); err != nil {
		return err
	}
	dir := filepath.Join(tmp, t.attempt)
	m, err := verify(dir)
	if err != nil {
		return err
	}
	if m.Status == record.StatusRunning && ex.code != 0 {
		// Killed before it could write how it ended: the archive is
		// kept aside, the run recorded failed with why.
		aside := filepath.Join(c.Dir, "kubernetes", "killed", t.attempt)
		if err := os.MkdirAll(filepath.Dir(aside), 0o755); err != nil {
			return fmt.Errorf("copy: %w", err)
		}
		if err := os.Rename(dir, aside); err != nil {
			return fmt.Errorf("copy: %w", err)
		}
		return &killedError{exit: ex, aside: aside}
	}
	dst := filepath.Join(c.RunsDir(), t.attempt)
	if err := os.Rename(dir, dst); err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	return nil
}

// stream copies the packed archive tarPath (want bytes) out of a pod's
// run container and unpacks it into tmp: an error unless every byte came
// and the tar stream parses.
func (e *Executor) stream(ctx context.Context, ns, pod, tarPath string, want int64, tmp, attempt string) error {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := e.Exec(ctx, ns, pod, ContainerName, []string{"cat", tarPath}, pw)
		pw.CloseWithError(err)
		done <- err
	}()
	n, err := untar(pr, tmp, attempt)
	// Drain what the stream has left (a tar's padding) to count it.
	rest, _ := io.Copy(io.Discard, io.LimitReader(pr, maxArchiveBytes))
	pr.Close()
	execErr := <-done
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	if execErr != nil {
		return fmt.Errorf("copy: %w", execErr)
	}
	if got := n + rest; got != want {
		return fmt.Errorf("copy cut: %d bytes received of the %d packed", got, want)
	}
	return nil
}

// verify reads a copied archive as compare will: its run.json must read;
// a run that says complete must load whole (every formal request, every
// device's power).
func verify(dir string) (record.Meta, error) {
	m, err := archive.ReadMeta(filepath.Join(dir, archive.RunFile))
	if err != nil {
		return m, fmt.Errorf("copied archive: %w", err)
	}
	if m.Status == record.StatusComplete {
		if _, err := archive.Load(dir); err != nil {
			return m, fmt.Errorf("copied archive says complete but does not load: %w", err)
		}
	}
	return m, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// untar extracts a tar stream of one directory, top, into dst: regular
// files and directories only, every name inside top. It returns the bytes
// it read.
func untar(r io.Reader, dst, top string) (int64, error) {
	cr := &countingReader{r: r}
	tr := tar.NewReader(cr)
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return cr.n, nil
		}
		if err != nil {
			return cr.n, fmt.Errorf("tar stream: %w", err)
		}
		name := filepath.Clean(h.Name)
		if name != top && !strings.HasPrefix(name, top+string(filepath.Separator)) {
			return cr.n, fmt.Errorf("tar entry %q is outside %s", h.Name, top)
		}
		p := filepath.Join(dst, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return cr.n, err
			}
		case tar.TypeReg:
			total += h.Size
			if total > maxArchiveBytes {
				return cr.n, fmt.Errorf("archive larger than %d bytes", int64(maxArchiveBytes))
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return cr.n, err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				return cr.n, err
			}
			_, cerr := io.Copy(f, tr)
			if err := f.Close(); cerr == nil {
				cerr = err
			}
			if cerr != nil {
				return cr.n, fmt.Errorf("tar entry %s: %w", h.Name, cerr)
			}
		default:
			return cr.n, fmt.Errorf("tar entry %q: type %q is not a file or directory", h.Name, string(h.Typeflag))
		}
	}
}

// RESTConfig is the cluster's configuration: the kubeconfig file given,
// else KUBECONFIG, else the in-cluster configuration (a sweep running in
// a pod), else ~/.kube/config.
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	return kubeconf.REST(kubeconfig, "kubeconfig")
}

// remoteExec runs commands in containers through the API server's exec
// subresource (WebSocket, falling back to SPDY).
func remoteExec(cfg *rest.Config, client kubernetes.Interface) ExecFunc {
	return func(ctx context.Context, ns, pod, container string, cmd []string, stdout io.Writer) error {
		req := client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
			VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
		u := req.URL()
		ex, err := executor(cfg, u)
		if err != nil {
			return fmt.Errorf("exec in %s/%s: %w", ns, pod, err)
		}
		var stderr bytes.Buffer
		if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: &stderr}); err != nil {
			if msg := strings.TrimSpace(stderr.String()); msg != "" {
				return fmt.Errorf("exec %s in %s/%s: %w: %s", cmd[0], ns, pod, err, oneLine(msg))
			}
			return fmt.Errorf("exec %s in %s/%s: %w", cmd[0], ns, pod, err)
		}
		return nil
	}
}

func executor(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error) {
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
	if err != nil {
		return nil, err
	}
	// SPDY only when the WebSocket upgrade itself was refused (an older
	// server or a proxy), as kubectl does: a command that started is
	// never run twice.
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// runExit is how the run's process ended in its pod: its exit status and
// the OOM kills of the container's memory cgroup.
type runExit struct {
	code, oomKills int
	raw            string
}

func parseExit(line string) runExit {
	f := strings.Fields(line)
	ex := runExit{raw: strings.TrimSpace(line), code: -1}
	if len(f) > 0 {
		if n, err := strconv.Atoi(f[0]); err == nil {
			ex.code = n
		}
	}
	if len(f) > 1 {
		ex.oomKills, _ = strconv.Atoi(f[1])
	}
	return ex
}

func (x runExit) String() string {
	if x.oomKills > 0 {
		return fmt.Sprintf("OOMKilled: the run was killed by its container's memory limit (exit %d, %d OOM kills)", x.code, x.oomKills)
	}
	if x.code > 128 {
		return fmt.Sprintf("the run was killed by signal %d (exit %d)", x.code-128, x.code)
	}
	return fmt.Sprintf("the run exited %d", x.code)
}

// noArchiveError: the run ended without making its archive directory (a
// refused flag, a profile that does not load).
type noArchiveError struct{ exit runExit }

func (e *noArchiveError) Error() string {
	return e.exit.String() + " without an archive"
}

// killedError: the run was killed before it wrote how it ended (its
// run.json still says running); its archive was put aside.
type killedError struct {
	exit  runExit
	aside string
}

func (e *killedError) Error() string {
	return fmt.Sprintf("%s before it wrote its status; the archive it left is in %s", e.exit, e.aside)
}
