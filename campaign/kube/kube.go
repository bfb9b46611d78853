package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/campaign"
)

// ExecFunc runs cmd in a container of a pod, its standard output to
// stdout; a non-zero exit is an error.
type ExecFunc func(ctx context.Context, namespace, pod, container string, cmd []string, stdout io.Writer) error

// Executor runs a campaign's runs as Kubernetes Jobs.
type Executor struct {
	// Kubeconfig is --kubeconfig ("": KUBECONFIG, else the in-cluster
	// configuration, else ~/.kube/config).
	Kubeconfig string
	// Image is the joulebench image of the runs (--image; "": DefaultImage).
	Image string
	// PullPolicy of the image ("": Kubernetes' default).
	PullPolicy corev1.PullPolicy
	// Client and Exec reach the cluster; nil: made from Kubeconfig
	// (tests inject a fake clientset and a fake exec).
	Client kubernetes.Interface
	Exec   ExecFunc
	// Hold is how long a pod whose run ended waits for its archive to be
	// copied, in seconds (0: DefaultHold).
	Hold int
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

var _ campaign.Executor = (*Executor)(nil)

// Name is "kubernetes".
func (e *Executor) Name() string { return "kubernetes" }

func (e *Executor) image() string {
	if e.Image == "" {
		return DefaultImage
	}
	return e.Image
}

func (e *Executor) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

// Describe is the Job manifest of a run (YAML) and, when the run has
// secrets, the name and keys of the Secret it references; never a value.
func (e *Executor) Describe(c *campaign.Campaign, r campaign.Run, dir, _ string) (string, error) {
	job, secret, err := Manifests(e.spec(c, r, filepath.Base(dir)))
	if err != nil {
		return "", err
	}
	b, err := yaml.Marshal(job)
	if err != nil {
		return "", err
	}
	// What the API server fills in is not part of the manifest.
	text := strings.Replace(string(b), "  creationTimestamp: null\n", "", -1)
	text = strings.TrimSuffix(text, "status: {}\n")
	out := "---\n" + text
	if secret != nil {
		keys := make([]string, 0, len(secret.Data))
		for k := range secret.Data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out += fmt.Sprintf("# Secret %s (made with the Job, values not shown) holds: %s\n", secret.Name, strings.Join(keys, ", "))
	}
	return out, nil
}

func (e *Executor) spec(c *campaign.Campaign, r campaign.Run, attempt string) Spec {
	return Spec{Campaign: c, Run: r, Attempt: attempt, Image: e.image(), PullPolicy: e.PullPolicy, Hold: e.Hold}
}

// connect makes the client and the exec function from the kubeconfig.
func (e *Executor) connect() error {
	if e.Client != nil && e.Exec != nil {
		return nil
	}
	cfg, err := RESTConfig(e.Kubeconfig)
	if err != nil {
		return err
	}
	if e.Client == nil {
		if e.Client, err = kubernetes.NewForConfig(cfg); err != nil {
			return fmt.Errorf("kubernetes client: %w", err)
		}
	}
	if e.Exec == nil {
		e.Exec = remoteExec(cfg, e.Client)
	}
	return nil
}

// tracked is one attempt's Job this sweep follows.
type tracked struct {
	run          campaign.Run
	attempt      string
	job          string
	pendingSince time.Time
	// probeSince is when the pod was first seen unready with a readiness
	// probe that cannot run (zero: not so).
	probeSince time.Time
	copyTries  int
	// api follows the failures to get its Job (the error policy).
	api *campaign.Transient
}

// Run runs the plan's runs as Jobs (every Job is created at once, as
// Slurm jobs are submitted: the cluster's scheduler and the GPU requests
// decide what runs together), copies each archive back when its run ends,
// and records a failed pod's reason in the run's record. Jobs a killed sweep left are
// found again by their labels and followed. When ctx is done, the Jobs
// this sweep follows are deleted with their pods and Secrets.
func (e *Executor) Run(ctx context.Context, c *campaign.Campaign, p campaign.Plan, o campaign.Options) (res campaign.Result, err error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if err := e.connect(); err != nil {
		return campaign.Result{}, err
	}
	return c.Drive(ctx, p, o, &kubeJobs{e: e, c: c, p: p, o: o})
}

// kubeJobs are a sweep's Jobs (campaign.Drive): found again by their
// labels.
type kubeJobs struct {
	e      *Executor
	c      *campaign.Campaign
	p      campaign.Plan
	o      campaign.Options
	follow []*tracked
}

// Reattach follows the Jobs a previous sweep left (reattach).
func (k *kubeJobs) Reattach(ctx context.Context) ([]string, error) {
	if err := os.MkdirAll(k.c.RunsDir(), 0o755); err != nil {
		return nil, fmt.Errorf("campaign directory: %w", err)
	}
	removeStaleCopies(k.c, k.o)
	follow, err := k.e.reattach(ctx, k.c, k.p, k.o)
	if err != nil {
		return nil, err
	}
	k.follow = follow
	ids := make([]string, len(follow))
	for i, t := range follow {
		ids[i] = t.run.ID
	}
	return ids, nil
}

// BeforeSubmit checks nothing: the cluster's scheduler places the pods.
func (*kubeJobs) BeforeSubmit(context.Context, []campaign.Run) error { return nil }

// Submit creates r's attempt's Job (and Secret).
func (k *kubeJobs) Submit(ctx context.Context, r campaign.Run) (string, error) {
	dir, err := k.c.NextDir(r)
	if err != nil {
		return "", err
	}
	t, err := k.e.create(ctx, k.c, r, filepath.Base(dir), k.o)
	if err != nil {
		// The Jobs made so far go on; the next sweep finds them by their
		// labels.
		return "", fmt.Errorf("run %s: %w", r.ID, err)
	}
	k.follow = append(k.follow, t)
	return fmt.Sprintf("created %s: job %s/%s, archive %s", r.ID, k.c.Kubernetes.NamespaceName(), t.job, dir), nil
}

// Follower follows the Jobs until each has given its archive or failed.
func (k *kubeJobs) Follower() (campaign.Follower, string, time.Duration) {
	return &kubeFollower{e: k.e, c: k.c, o: k.o, follow: k.follow}, "list pods", k.c.Kubernetes.PollEvery()
}

// reattach finds the Jobs of this campaign a previous sweep left: those
// of a run of the plan whose archive is not here yet are followed; those
// whose archive is here already (the sweep was killed after the copy)
// are deleted.
func (e *Executor) reattach(ctx context.Context, c *campaign.Campaign, p campaign.Plan, o campaign.Options) ([]*tracked, error) {
	ns := c.Kubernetes.NamespaceName()
	lctx, cancel := campaign.CallContext(ctx)
	defer cancel()
	jobs, err := e.Client.BatchV1().Jobs(ns).List(lctx, metav1.ListOptions{LabelSelector: Selector(c)})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: list the campaign's jobs in %s: %w", ns, err)
	}
	byID := map[string]campaign.Run{}
	for _, r := range p.Runs {
		byID[r.ID] = r
	}
	var out []*tracked
	for _, j := range jobs.Items {
		if j.DeletionTimestamp != nil {
			continue
		}
		id, attempt := j.Annotations[AnnotationRun], j.Annotations[AnnotationAttempt]
		r, ok := byID[id]
		if !ok || attempt == "" || filepath.Base(attempt) != attempt {
			fmt.Fprintf(o.Log, "job %s/%s: run %q is not in this plan: left alone\n", ns, j.Name, id)
			continue
		}
		if _, err := os.Stat(filepath.Join(c.RunsDir(), attempt)); err == nil {
			fmt.Fprintf(o.Log, "job %s/%s: archive %s already here: deleting the job\n", ns, j.Name, attempt)
			e.deleteJob(ctx, ns, j.Name, o)
			continue
		}
		fmt.Fprintf(o.Log, "re-attach %s: job %s/%s\n", id, ns, j.Name)
		out = append(out, e.newTracked(r, attempt, j.Name, c, o))
	}
	sort.Slice(out, func(a, b int) bool { return out[a].attempt < out[b].attempt })
	return out, nil
}

// create makes an attempt's Secret (when it has secrets) and Job; the
// Secret is then owned by the Job, so that it goes with it.
func (e *Executor) create(ctx context.Context, c *campaign.Campaign, r campaign.Run, attempt string, o campaign.Options) (*tracked, error) {
	ctx, cancel := campaign.CallContext(ctx)
	defer cancel()
	job, secret, err := Manifests(e.spec(c, r, attempt))
	if err != nil {
		return nil, err
	}
	ns := job.Namespace
	if secret != nil {
		if _, err := e.Client.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("kubernetes: create secret %s/%s: %w", ns, secret.Name, err)
		}
	}
	made, err := e.Client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		if secret != nil {
			dctx, dcancel := campaign.CallContext(context.Background())
			defer dcancel()
			if derr := e.Client.CoreV1().Secrets(ns).Delete(dctx, secret.Name, metav1.DeleteOptions{}); derr != nil && !apierrors.IsNotFound(derr) {
				fmt.Fprintf(o.Log, "kubernetes: delete secret %s/%s: %v\n", ns, secret.Name, derr)
			}
		}
		return nil, fmt.Errorf("kubernetes: create job %s/%s: %w", ns, job.Name, err)
	}
	if secret != nil {
		own := metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: made.Name, UID: made.UID}
		s, err := e.Client.CoreV1().Secrets(ns).Get(ctx, secret.Name, metav1.GetOptions{})
		if err == nil {
			s.OwnerReferences = append(s.OwnerReferences, own)
			_, err = e.Client.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
		}
		if err != nil {
			// The sweep deletes it with the Job anyway; the owner only
			// lets the cluster remove it when the Job goes otherwise.
			fmt.Fprintf(o.Log, "kubernetes: secret %s/%s: owner: %v\n", ns, secret.Name, err)
		}
	}
	return e.newTracked(r, attempt, job.Name, c, o), nil
}

// newTracked is an attempt's Job to follow.
func (e *Executor) newTracked(r campaign.Run, attempt, job string, c *campaign.Campaign, o campaign.Options) *tracked {
	return &tracked{run: r, attempt: attempt, job: job, api: campaign.NewTransient("get job "+job, c.Kubernetes.PollEvery(), o)}
}

// kubeFollower is the Kubernetes executor's verbs over its Jobs for
// campaign.Follow: the pods' list, each attempt's step (copy its
// archive, record its failure), the Jobs' deletion.
type kubeFollower struct {
	e      *Executor
	c      *campaign.Campaign
	o      campaign.Options
	follow []*tracked
	pods   *corev1.PodList
	probes map[string]string
}

// Status lists the campaign's pods (bounded by campaign.CallContext), and
// the probe errors of those running unready. Nothing is decided without
// the pods.
func (f *kubeFollower) Status(ctx context.Context) error {
	lctx, cancel := campaign.CallContext(ctx)
	defer cancel()
	pods, err := f.e.Client.CoreV1().Pods(f.c.Kubernetes.NamespaceName()).List(lctx, metav1.ListOptions{LabelSelector: Selector(f.c)})
	if err != nil {
		return fmt.Errorf("kubernetes: %w", err)
	}
	f.pods = pods
	f.probes = f.e.probeErrors(ctx, f.c.Kubernetes.NamespaceName(), pods, f.o)
	return nil
}

// Settle steps every followed attempt; a bookkeeping error stops at once,
// the attempts not stepped yet still followed.
func (f *kubeFollower) Settle(ctx context.Context) ([]string, bool, error) {
	var left []*tracked
	var err error
	for i, t := range f.follow {
		if ctx.Err() != nil {
			left = append(left, f.follow[i:]...)
			break
		}
		var done bool
		done, err = f.e.step(ctx, f.c, t, f.pods, f.probes, f.o)
		if err != nil {
			// Its Job too when it was not done with (its API call
			// failed past the bound): it goes on.
			if !done {
				left = append(left, t)
			}
			left = append(left, f.follow[i+1:]...)
			break
		}
		if !done {
			left = append(left, t)
		}
	}
	changed := len(left) != len(f.follow)
	f.follow = left
	ids := make([]string, len(left))
	for i, t := range left {
		ids[i] = t.run.ID
	}
	return ids, changed, err
}

func (f *kubeFollower) Cancel() { f.e.deleteAll(f.c, f.follow, f.o) }

func (f *kubeFollower) Following() int { return len(f.follow) }

// probeErrors are, by pod, the kubelet's messages that the readiness
// probe of a running, unready pod cannot run (probeCannotRun): one list
// of the namespace's Unhealthy events, only while such a pod is
// followed. A failed list is logged and taken as none.
func (e *Executor) probeErrors(ctx context.Context, ns string, pods *corev1.PodList, o campaign.Options) map[string]string {
	unready := map[string]bool{}
	for i := range pods.Items {
		if runningUnready(&pods.Items[i]) {
			unready[pods.Items[i].Name] = true
		}
	}
	if len(unready) == 0 {
		return nil
	}
	ctx, cancel := campaign.CallContext(ctx)
	defer cancel()
	evs, err := e.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Pod,reason=Unhealthy"})
	if err != nil {
		fmt.Fprintf(o.Log, "kubernetes: list the pods' events: %v (retrying)\n", err)
		return nil
	}
	out := map[string]string{}
	for _, ev := range evs.Items {
		// The fake clientset ignores field selectors: filtered here too.
		name := ev.InvolvedObject.Name
		if ev.InvolvedObject.Kind == "Pod" && ev.Reason == "Unhealthy" && unready[name] && probeCannotRun(ev.Message) {
			out[name] = ev.Message
		}
	}
	return out
}

// step looks at one attempt: done once its archive is here or its failure
// is recorded. probes are the pods whose readiness probe cannot run.
func (e *Executor) step(ctx context.Context, c *campaign.Campaign, t *tracked, pods *corev1.PodList, probes map[string]string, o campaign.Options) (bool, error) {
	ns := c.Kubernetes.NamespaceName()
	var pod *corev1.Pod
	if pods != nil {
		for i := range pods.Items {
			pp := &pods.Items[i]
			if pp.Labels["job-name"] == t.job || pp.Labels[batchv1.JobNameLabel] == t.job || pp.Annotations[AnnotationAttempt] == t.attempt {
				if pod == nil || pp.CreationTimestamp.After(pod.CreationTimestamp.Time) {
					pod = pp
				}
			}
		}
	}
	gctx, cancel := campaign.CallContext(ctx)
	job, err := e.Client.BatchV1().Jobs(ns).Get(gctx, t.job, metav1.GetOptions{})
	cancel()
	switch {
	case apierrors.IsNotFound(err):
		t.api.Succeeded()
		job = nil
		if pod == nil {
			return true, e.recordFailure(c, t, fmt.Sprintf("job %s/%s deleted before its run ended (not by this sweep)", ns, t.job), o)
		}
	case err != nil && ctx.Err() == nil:
		// Tried again at the next poll, up to the policy's bound.
		_, stop := t.api.Failed(fmt.Errorf("kubernetes: %w", err), o.Log)
		return false, stop
	case err != nil:
		return false, nil
	default:
		t.api.Succeeded()
	}
	now := e.now()
	if unschedulable(pod) {
		if t.pendingSince.IsZero() {
			t.pendingSince = now
		}
	} else {
		t.pendingSince = time.Time{}
	}
	ph, why := observe(job, pod, now, t.pendingSince, c.Kubernetes.ScheduleWait())
	if msg := probes[podName(pod)]; ph == waiting && msg != "" {
		if t.probeSince.IsZero() {
			t.probeSince = now
		}
		if wait := c.Kubernetes.ProbeWait(); now.Sub(t.probeSince) >= wait {
			ph, why = failed, probeFailure(pod, wait, msg)
		}
	} else {
		t.probeSince = time.Time{}
	}
	switch ph {
	case failed:
		if pod != nil {
			e.saveLog(ctx, c, t, pod.Name, o)
		}
		e.deleteJob(context.Background(), ns, t.job, o)
		if c.Kubernetes.PVC != "" {
			// The claim outlives the pod: what the run wrote is kept.
			aside, err := e.rescue(ctx, c, t, o)
			switch {
			case err != nil:
				why += "; what it left on PVC " + c.Kubernetes.PVC + " could not be brought back: " + err.Error()
			case aside != "":
				why += "; the archive it left is in " + aside
			}
		}
		return true, e.recordFailure(c, t, why, o)
	case ready:
		err := e.fetch(ctx, c, t, pod.Name, o)
		e.saveLog(ctx, c, t, pod.Name, o)
		var none *noArchiveError
		var killed *killedError
		if errors.As(err, &none) || errors.As(err, &killed) {
			e.release(ctx, ns, pod.Name, o)
			e.deleteJob(context.Background(), ns, t.job, o)
			return true, e.recordFailure(c, t, fmt.Sprintf("%v (pod %s; its log: %s)", err, pod.Name, filepath.Join(c.Dir, "logs", t.attempt+".log")), o)
		}
		if err == nil {
			e.release(ctx, ns, pod.Name, o)
			e.deleteJob(context.Background(), ns, t.job, o)
			fmt.Fprintf(o.Log, "    %s: archive %s copied from pod %s/%s\n", t.run.ID, filepath.Join(c.RunsDir(), t.attempt), ns, pod.Name)
			return true, nil
		}
		if ctx.Err() != nil {
			return false, nil
		}
		t.copyTries++
		fmt.Fprintf(o.Log, "    %s: copy %d of the archive from pod %s/%s: %v\n", t.run.ID, t.copyTries, ns, pod.Name, err)
		if t.copyTries >= maxCopyTries {
			e.release(ctx, ns, pod.Name, o)
			e.deleteJob(context.Background(), ns, t.job, o)
			return true, e.recordFailure(c, t, fmt.Sprintf("the archive could not be copied whole from pod %s in %d tries: %v", pod.Name, maxCopyTries, err), o)
		}
	}
	return false, nil
}

const maxCopyTries = 3

func podName(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	return pod.Name
}

// release tells the pod that its archive is safe: it ends.
func (e *Executor) release(ctx context.Context, ns, pod string, o campaign.Options) {
	ctx, cancel := campaign.CallContext(ctx)
	defer cancel()
	if err := e.Exec(ctx, ns, pod, ContainerName, []string{"touch", StateDir + "/release"}, io.Discard); err != nil {
		fmt.Fprintf(o.Log, "kubernetes: release pod %s/%s: %v (the job is deleted anyway)\n", ns, pod, err)
	}
}

// recordFailure writes the attempt's record: a run.json with status
// failed and why, in OUT/runs/<attempt>, so that the campaign counts the
// run failed (and --retry-failed runs it again in a new directory).
func (e *Executor) recordFailure(c *campaign.Campaign, t *tracked, why string, o campaign.Options) error {
	dir := filepath.Join(c.RunsDir(), t.attempt)
	reason := "kubernetes: " + why
	now := float64(e.now().UnixNano()) / 1e9
	meta := record.Meta{
		RunID:     t.attempt,
		Status:    record.StatusFailed,
		Reason:    reason,
		StartedAt: now,
		EndedAt:   now,
		Labels:    map[string]string{"campaign": c.Name, "executor": "kubernetes", "job": t.job},
	}
	w, err := archive.Create(dir, meta)
	if err != nil {
		return fmt.Errorf("run %s: record the failure (%s): %w", t.run.ID, why, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("run %s: record the failure: %w", t.run.ID, err)
	}
	fmt.Fprintf(o.Log, "    %s: failed: %s (recorded in %s)\n", t.run.ID, reason, dir)
	return nil
}

// deleteJob deletes a Job with its pods (foreground propagation: the Job
// goes once its pods are gone) and its Secret.
func (e *Executor) deleteJob(ctx context.Context, ns, name string, o campaign.Options) {
	ctx, cancel := campaign.CallContext(ctx)
	defer cancel()
	fg := metav1.DeletePropagationForeground
	if err := e.Client.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintf(o.Log, "kubernetes: delete job %s/%s: %v\n", ns, name, err)
	}
	if err := e.Client.CoreV1().Secrets(ns).Delete(ctx, SecretName(name), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintf(o.Log, "kubernetes: delete secret %s/%s: %v\n", ns, SecretName(name), err)
	}
}

// deleteAll deletes the followed Jobs (Ctrl-C, or an error), and waits a
// little for them to be gone.
func (e *Executor) deleteAll(c *campaign.Campaign, follow []*tracked, o campaign.Options) {
	if len(follow) == 0 {
		return
	}
	ns := c.Kubernetes.NamespaceName()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var names []string
	for _, t := range follow {
		e.deleteJob(ctx, ns, t.job, o)
		names = append(names, t.job)
	}
	fmt.Fprintf(o.Log, "deleted jobs %s (with their pods)\n", strings.Join(names, " "))
	for ctx.Err() == nil {
		gone := 0
		for _, n := range names {
			if _, err := e.Client.BatchV1().Jobs(ns).Get(ctx, n, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				gone++
			}
		}
		if gone == len(names) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// saveLog keeps the run container's log as OUT/logs/<attempt>.log (where
// a local run's log goes), before the Job and its pod are deleted.
func (e *Executor) saveLog(ctx context.Context, c *campaign.Campaign, t *tracked, pod string, o campaign.Options) {
	ns := c.Kubernetes.NamespaceName()
	if err := e.keepLog(ctx, c, t, pod); err != nil {
		fmt.Fprintf(o.Log, "kubernetes: keep the log of pod %s/%s: %v\n", ns, pod, err)
	}
}

// keepLog copies the run container's log (at most 64 MiB) into
// OUT/logs/<attempt>.log.
func (e *Executor) keepLog(ctx context.Context, c *campaign.Campaign, t *tracked, pod string) error {
	if err := os.MkdirAll(filepath.Join(c.Dir, "logs"), 0o755); err != nil {
		return err
	}
	ctx, cancel := campaign.CallContext(ctx)
	defer cancel()
	rc, err := e.Client.CoreV1().Pods(c.Kubernetes.NamespaceName()).GetLogs(pod, &corev1.PodLogOptions{Container: ContainerName}).Stream(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := os.Create(filepath.Join(c.Dir, "logs", t.attempt+".log"))
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, io.LimitReader(rc, 64<<20)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// removeStaleCopies removes the temporary copies a killed sweep left in
// OUT/runs (.<attempt>.copy-*): they were never verified.
func removeStaleCopies(c *campaign.Campaign, o campaign.Options) {
	stale, _ := filepath.Glob(filepath.Join(c.RunsDir(), ".*.copy-*"))
	for _, d := range stale {
		if err := os.RemoveAll(d); err != nil {
			fmt.Fprintf(o.Log, "kubernetes: remove the unverified copy %s: %v\n", d, err)
		}
	}
}
