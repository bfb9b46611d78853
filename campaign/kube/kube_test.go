package kube

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/campaign"
)

const testCampaign = `name: kt
profile: benchmark-1.5
out: out
matrix:
  engine: [{kind: sim}]
  model: [{id: sim-llm-8b, params: 8e9}, {id: sim-llm-70b, params: 70e9}]
args: [--set, request_count=20]
kubernetes: {namespace: bench, poll: 10ms, schedule_timeout: 1m}
`

func loadCampaign(t *testing.T, src string) (*campaign.Campaign, campaign.Plan) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "campaign.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := campaign.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return c, c.Expand()
}

// sampleTar is the tar stream of archive/testdata/sample-run-ok (a
// complete run that loads) as the directory top.
func sampleTar(t *testing.T, top string) []byte {
	t.Helper()
	src := filepath.Join("..", "..", "archive", "testdata", "sample-run-ok")
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: top + "/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: top + "/" + d.Name(), Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b))}); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// cluster is a fake API server whose Job "controller" makes one pod per
// Job, in the state podFor gives, and a fake exec that serves each pod's
// packed archive.
type cluster struct {
	t      *testing.T
	client *fake.Clientset
	mu     sync.Mutex
	// podFor sets a new pod's status (nil: running and ready).
	podFor func(job *batchv1.Job, pod *corev1.Pod)
	// tarFor is the packed archive of an attempt (nil: sampleTar); cut
	// serves only its first cut bytes while announcing the whole size.
	tarFor func(attempt string) []byte
	cut    int
	// noArchive: the run made no archive directory (it exited 2).
	noArchive bool
	// exit is the pod's exit file ("": "0 0").
	exit     string
	released map[string]bool
	execs    []string
}

func newCluster(t *testing.T) *cluster {
	k := &cluster{t: t, client: fake.NewSimpleClientset(), released: map[string]bool{}}
	k.client.PrependReactor("create", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		job := a.(k8stesting.CreateAction).GetObject().(*batchv1.Job)
		k.addPod(job)
		return false, nil, nil
	})
	return k
}

func (k *cluster) addPod(job *batchv1.Job) {
	lb := map[string]string{batchv1.JobNameLabel: job.Name}
	for n, v := range job.Spec.Template.Labels {
		lb[n] = v
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: job.Name + "-x1", Namespace: job.Namespace, Labels: lb, Annotations: job.Spec.Template.Annotations},
		Spec:       job.Spec.Template.Spec,
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: ContainerName, Image: job.Spec.Template.Spec.Containers[0].Image, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		}}},
	}
	k.mu.Lock()
	podFor := k.podFor
	k.mu.Unlock()
	if podFor != nil {
		podFor(job, pod)
	}
	if err := k.client.Tracker().Add(pod); err != nil {
		k.t.Error(err)
	}
}

func (k *cluster) exec(_ context.Context, ns, pod, container string, cmd []string, stdout io.Writer) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.execs = append(k.execs, pod+": "+strings.Join(cmd, " "))
	p, err := k.client.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, ns, pod)
	if err != nil {
		return err
	}
	attempt := p.(*corev1.Pod).Annotations[AnnotationAttempt]
	tb := sampleTar(k.t, attempt)
	if k.tarFor != nil {
		tb = k.tarFor(attempt)
	}
	switch {
	case cmd[0] == "sh" && strings.Contains(cmd[2], "/tmp/a.tar"):
		fmt.Fprintf(stdout, "%d\n", len(tb))
	case cmd[0] == "cat" && cmd[1] == "/tmp/a.tar":
		_, err := stdout.Write(tb)
		return err
	case cmd[0] == "sh" && k.noArchive:
		fmt.Fprintf(stdout, "2 0\nnone\n")
	case cmd[0] == "sh":
		fmt.Fprintf(stdout, "%s\n%d\n", k.exitLine(), len(tb))
	case cmd[0] == "cat" && strings.HasSuffix(cmd[1], "archive.tar"):
		if k.cut > 0 && k.cut < len(tb) {
			tb = tb[:k.cut]
		}
		_, err := stdout.Write(tb)
		return err
	case cmd[0] == "touch":
		k.released[pod] = true
	}
	return nil
}

func (k *cluster) exitLine() string {
	if k.exit == "" {
		return "0 0"
	}
	return k.exit
}

func (k *cluster) executor() *Executor {
	return &Executor{Client: k.client, Exec: k.exec, Image: "joulebench:test"}
}

func (k *cluster) jobs(t *testing.T, ns string) []batchv1.Job {
	t.Helper()
	l, err := k.client.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// Both runs become Jobs labelled with the campaign and run id; each
// archive is copied back whole (it loads), the pod released and the Job
// deleted.
func TestRunCopiesArchivesBack(t *testing.T) {
	c, p := loadCampaign(t, testCampaign)
	k := newCluster(t)
	var created []*batchv1.Job
	k.client.PrependReactor("create", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		created = append(created, a.(k8stesting.CreateAction).GetObject().(*batchv1.Job).DeepCopy())
		return false, nil, nil
	})
	var log bytes.Buffer
	res, err := k.executor().Run(context.Background(), c, p, campaign.Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Done != 2 || len(res.Complete) != 2 {
		t.Fatalf("summary %s, complete %v\n%s", res.Summary, res.Complete, log.String())
	}
	for _, dir := range res.Complete {
		if _, err := archive.Load(dir); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
	if len(created) != 2 {
		t.Fatalf("%d jobs created, want 2", len(created))
	}
	for i, j := range created {
		r := p.Runs[i]
		if j.Labels[LabelCampaign] != "kt" || j.Labels[LabelRun] != r.ID || j.Annotations[AnnotationRun] != r.ID || j.Namespace != "bench" {
			t.Errorf("job %d: labels %v annotations %v namespace %s", i, j.Labels, j.Annotations, j.Namespace)
		}
		if *j.Spec.BackoffLimit != 0 || j.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("job %d: backoff %d, restart %s: one pod per attempt", i, *j.Spec.BackoffLimit, j.Spec.Template.Spec.RestartPolicy)
		}
	}
	if len(k.released) != 2 {
		t.Errorf("released pods %v, want both", k.released)
	}
	if n := len(k.jobs(t, "bench")); n != 0 {
		t.Errorf("%d jobs left after their archives came back", n)
	}
	// Run again: both complete, nothing created.
	created = nil
	if _, err := k.executor().Run(context.Background(), c, p, campaign.Options{Log: &log}); err != nil {
		t.Fatal(err)
	}
	if len(created) != 0 {
		t.Errorf("a second sweep created %d jobs for complete runs", len(created))
	}
}

// A copy cut short is never taken as an archive: it is tried again, and
// after maxCopyTries the run is recorded failed; nothing of the cut copy
// is in OUT/runs.
func TestCutCopyIsNotComplete(t *testing.T) {
	c, p := loadCampaign(t, testCampaign)
	p.Runs = p.Runs[:1]
	full := sampleTar(t, "x")
	for _, cut := range []int{len(full) - 1024, 512, len(full) / 2} {
		k := newCluster(t)
		k.cut = cut
		os.RemoveAll(c.RunsDir())
		var log bytes.Buffer
		res, err := k.executor().Run(context.Background(), c, p, campaign.Options{Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.Failed != 1 || len(res.Complete) != 0 {
			t.Fatalf("cut at %d: summary %s\n%s", cut, res.Summary, log.String())
		}
		as, _ := c.Attempts(p.Runs[0])
		if len(as) != 1 || !strings.Contains(as[0].Reason, "could not be copied whole") {
			t.Fatalf("cut at %d: attempts %+v", cut, as)
		}
		entries, _ := os.ReadDir(c.RunsDir())
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				t.Errorf("cut at %d: temporary copy %s left", cut, e.Name())
			}
		}
		if _, err := os.Stat(filepath.Join(as[0].Dir, "power.csv")); err == nil {
			b, _ := os.ReadFile(filepath.Join(as[0].Dir, "power.csv"))
			if len(b) > 100 {
				t.Errorf("cut at %d: the cut copy's power.csv is in the record", cut)
			}
		}
	}
}

// A pod that fails says why in the run's record (run.json's reason).
func TestFailedPodReasonRecorded(t *testing.T) {
	cases := []struct {
		name string
		pod  func(*corev1.Pod)
		job  func(*batchv1.Job)
		want string
	}{
		{"oom", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses[0].Ready = false
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}
		}, nil, "kubernetes: OOMKilled: container run of pod"},
		{"image pull", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.ContainerStatuses[0].Ready = false
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "joulebench:test"`}}
		}, nil, `kubernetes: ImagePullBackOff: image joulebench:test: Back-off pulling image "joulebench:test"`},
		{"evicted", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.Reason = "Evicted"
			p.Status.Message = "The node was low on resource: memory."
			p.Status.ContainerStatuses[0].Ready = false
		}, nil, "kubernetes: Evicted: The node was low on resource: memory."},
		{"deadline", nil, func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline"}}
		}, "kubernetes: DeadlineExceeded: the Job ran longer than kubernetes.deadline (Job was active longer than specified deadline)"},
		// The Job controller deletes the pod of a Job past its deadline:
		// the reason is the deadline, not the deletion.
		{"deadline, pod deleted", func(p *corev1.Pod) {
			now := metav1.Now()
			p.DeletionTimestamp = &now
			p.Status.ContainerStatuses[0].Ready = false
		}, func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline"}}
		}, "kubernetes: DeadlineExceeded: the Job ran longer than kubernetes.deadline"},
		{"deleted by someone", func(p *corev1.Pod) {
			now := metav1.Now()
			p.DeletionTimestamp = &now
			p.Status.ContainerStatuses[0].Ready = false
		}, nil, "kubernetes: pod jb-"},
		// OOMKilled says more than the Job's BackoffLimitExceeded.
		{"oom, job failed", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses[0].Ready = false
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}
		}, func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"}}
		}, "kubernetes: OOMKilled: container run of pod"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, p := loadCampaign(t, testCampaign)
			p.Runs = p.Runs[:1]
			k := newCluster(t)
			k.podFor = func(j *batchv1.Job, pod *corev1.Pod) {
				if tc.pod != nil {
					tc.pod(pod)
				} else {
					pod.Status.ContainerStatuses[0].Ready = false
				}
			}
			if tc.job != nil {
				k.client.PrependReactor("get", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
					o, err := k.client.Tracker().Get(a.GetResource(), a.GetNamespace(), a.(k8stesting.GetAction).GetName())
					if err != nil {
						return true, nil, err
					}
					j := o.(*batchv1.Job).DeepCopy()
					tc.job(j)
					return true, j, nil
				})
			}
			var log bytes.Buffer
			res, err := k.executor().Run(context.Background(), c, p, campaign.Options{Log: &log})
			if err != nil {
				t.Fatal(err)
			}
			if res.Summary.Failed != 1 {
				t.Fatalf("summary %s\n%s", res.Summary, log.String())
			}
			as, _ := c.Attempts(p.Runs[0])
			m, err := archive.ReadMeta(filepath.Join(as[0].Dir, archive.RunFile))
			if err != nil {
				t.Fatal(err)
			}
			if m.Status != record.StatusFailed || !strings.HasPrefix(m.Reason, tc.want) {
				t.Errorf("record: status %s reason %q, want failed %q...", m.Status, m.Reason, tc.want)
			}
			if n := len(k.jobs(t, "bench")); n != 0 {
				t.Errorf("%d jobs left after the failure", n)
			}
		})
	}
}

// A run that exits before it makes its archive (a refused flag) is
// recorded failed at once, with its exit status, not copied three times.
func TestRunWithoutArchive(t *testing.T) {
	c, p := loadCampaign(t, testCampaign)
	p.Runs = p.Runs[:1]
	k := newCluster(t)
	k.noArchive = true
	var log bytes.Buffer
	res, err := k.executor().Run(context.Background(), c, p, campaign.Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	as, _ := c.Attempts(p.Runs[0])
	if res.Summary.Failed != 1 || len(as) != 1 || !strings.HasPrefix(as[0].Reason, "kubernetes: the run exited 2 without an archive (pod ") {
		t.Fatalf("summary %s, attempts %+v\n%s", res.Summary, as, log.String())
	}
	if strings.Contains(log.String(), "copy 1") {
		t.Errorf("a missing archive was copied again:\n%s", log.String())
	}
}

// An unschedulable pod fails its run only after schedule_timeout, with the
// scheduler's message.
func TestUnschedulableAfterTimeout(t *testing.T) {
	c, p := loadCampaign(t, testCampaign)
	p.Runs = p.Runs[:1]
	k := newCluster(t)
	k.podFor = func(_ *batchv1.Job, pod *corev1.Pod) {
		pod.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
		}}}
	}
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	polls := 0
	e := k.executor()
	e.Now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		polls++
		if polls > 3 {
			now = now.Add(30 * time.Second) // 1m timeout: failed on the 3rd step after this
		}
		return now
	}
	var log bytes.Buffer
	res, err := e.Run(context.Background(), c, p, campaign.Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	as, _ := c.Attempts(p.Runs[0])
	if res.Summary.Failed != 1 || len(as) != 1 || as[0].Reason != "kubernetes: Unschedulable for 1m0s: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu." {
		t.Fatalf("summary %s, attempts %+v\n%s", res.Summary, as, log.String())
	}
	if polls < 5 {
		t.Errorf("failed after %d clock reads: before the timeout", polls)
	}
}

// A restarted sweep re-attaches to the Jobs a killed sweep left (found by
// label) instead of creating them again; a Job whose archive is already
// here is deleted.
func TestResumeReattaches(t *testing.T) {
	c, p := loadCampaign(t, testCampaign)
	k := newCluster(t)
	// The killed sweep made both Jobs; the first run's archive came back
	// before it died.
	for i, r := range p.Runs {
		job, _, err := Manifests(Spec{Campaign: c, Run: r, Attempt: r.ID, Image: "joulebench:test"})
		if err != nil {
			t.Fatal(err)
		}
		if err := k.client.Tracker().Add(job); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			w, err := archive.Create(filepath.Join(c.RunsDir(), r.ID), record.Meta{RunID: r.ID, Status: record.StatusComplete, StartedAt: 1, EndedAt: 2})
			if err != nil {
				t.Fatal(err)
			}
			w.Close()
			continue
		}
		k.addPod(job)
	}
	creates := 0
	k.client.PrependReactor("create", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		creates++
		return false, nil, nil
	})
	var log bytes.Buffer
	res, err := k.executor().Run(context.Background(), c, p, campaign.Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if creates != 0 {
		t.Errorf("%d jobs created on resume, want 0 (re-attach)\n%s", creates, log.String())
	}
	if !strings.Contains(log.String(), "re-attach "+p.Runs[1].ID) || !strings.Contains(log.String(), "already here: deleting the job") {
		t.Errorf("log:\n%s", log.String())
	}
	if _, err := archive.Load(filepath.Join(c.RunsDir(), p.Runs[1].ID)); err != nil {
		t.Errorf("re-attached run's archive: %v", err)
	}
	if n := len(k.jobs(t, "bench")); n != 0 {
		t.Errorf("%d jobs left", n)
	}
	_ = res
}

// Ctrl-C deletes the Jobs started (foreground: with their pods) and their
// Secrets, and the sweep says it was interrupted.
func TestInterruptDeletesJobs(t *testing.T) {
	c, p := loadCampaign(t, strings.Replace(testCampaign, "args: [", "args: [--api-key, sk-TOPSECRET, ", 1))
	k := newCluster(t)
	k.podFor = func(_ *batchv1.Job, pod *corev1.Pod) { pod.Status.ContainerStatuses[0].Ready = false }
	var deletes []string
	var propagation []metav1.DeletionPropagation
	k.client.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		deletes = append(deletes, a.GetResource().Resource+"/"+d.GetName())
		if a.GetResource().Resource == "jobs" && d.GetDeleteOptions().PropagationPolicy != nil {
			propagation = append(propagation, *d.GetDeleteOptions().PropagationPolicy)
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(k.jobs(t, "bench")) < 2 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	var log bytes.Buffer
	res, err := k.executor().Run(ctx, c, p, campaign.Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted {
		t.Error("not interrupted")
	}
	if n := len(k.jobs(t, "bench")); n != 0 {
		t.Errorf("%d jobs left after Ctrl-C", n)
	}
	secrets, _ := k.client.CoreV1().Secrets("bench").List(context.Background(), metav1.ListOptions{})
	if len(secrets.Items) != 0 {
		t.Errorf("%d secrets left after Ctrl-C", len(secrets.Items))
	}
	if len(propagation) != 2 || propagation[0] != metav1.DeletePropagationForeground {
		t.Errorf("job deletions' propagation %v, want Foreground for both (deletes %v)", propagation, deletes)
	}
}

// A credential reaches the Job through a Secret its environment
// references: the Job (args, env, labels, annotations) holds no value.
func TestSecretsOnlyInSecret(t *testing.T) {
	c, p := loadCampaign(t, strings.Replace(testCampaign, "args: [", "args: [--api-key, sk-TOPSECRET, --engine-url, 'http://u:pw-SECRET@h:1/v1', ", 1))
	job, secret, err := Manifests(Spec{Campaign: c, Run: p.Runs[0], Attempt: p.Runs[0].ID, Image: "i"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(job)
	for _, s := range []string{"sk-TOPSECRET", "pw-SECRET"} {
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("the job holds %s:\n%s", s, b)
		}
	}
	if secret == nil || string(secret.Data["JOULEBENCH_API_KEY"]) != "sk-TOPSECRET" || !strings.Contains(string(secret.Data["JOULEBENCH_ENGINE_URL"]), "pw-SECRET") {
		t.Fatalf("secret %+v", secret)
	}
	refs := 0
	for _, e := range job.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == secret.Name {
			refs++
		}
	}
	if refs != 2 {
		t.Errorf("%d env vars reference the secret, want 2", refs)
	}
	// The dry run shows the Secret's keys, not its values.
	d, err := (&Executor{Image: "i"}).Describe(c, p.Runs[0], p.Runs[0].ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(d, "sk-TOPSECRET") || strings.Contains(d, "pw-SECRET") || !strings.Contains(d, "holds: JOULEBENCH_API_KEY, JOULEBENCH_ENGINE_URL") {
		t.Errorf("dry run:\n%s", d)
	}
}

// The kubernetes section reaches the pod: node selector, tolerations,
// resources, the GPUs as nvidia.com/gpu (the model's tp for a run that
// needs one; kubernetes.gpus overrides), the PVC, the deadline.
func TestManifestFromSection(t *testing.T) {
	src := `name: g
profile: benchmark-1.5
out: out
matrix:
  engine: [{kind: vllm}]
  model: [{id: meta-llama/Llama-3.1-8B-Instruct, tp: 2}]
kubernetes:
  namespace: gpu
  service_account: bench
  node_selector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  resources: {requests: {cpu: "8", memory: 64Gi}, limits: {memory: 64Gi}}
  pvc: bench-archives
  deadline: 2h
`
	c, p := loadCampaign(t, src)
	job, _, err := Manifests(Spec{Campaign: c, Run: p.Runs[0], Attempt: p.Runs[0].ID, Image: "i"})
	if err != nil {
		t.Fatal(err)
	}
	ps := job.Spec.Template.Spec
	ct := ps.Containers[0]
	if ps.ServiceAccountName != "bench" || ps.NodeSelector["nvidia.com/gpu.product"] != "NVIDIA-H100-80GB-HBM3" || len(ps.Tolerations) != 1 || ps.Tolerations[0].Operator != corev1.TolerationOpExists {
		t.Errorf("pod spec %+v", ps)
	}
	if q := ct.Resources.Limits["nvidia.com/gpu"]; q.Value() != 2 {
		t.Errorf("gpu limit %v, want 2 (tp)", q.String())
	}
	if q := ct.Resources.Requests["cpu"]; q.String() != "8" {
		t.Errorf("cpu request %s", q.String())
	}
	if ps.Volumes[0].PersistentVolumeClaim == nil || ps.Volumes[0].PersistentVolumeClaim.ClaimName != "bench-archives" {
		t.Errorf("work volume %+v", ps.Volumes[0])
	}
	if sp := ct.VolumeMounts[0].SubPath; !strings.HasPrefix(sp, "joulebench/g-") {
		t.Errorf("work volume's subPath %q: a campaign directory of its own on the PVC", sp)
	}
	if *job.Spec.ActiveDeadlineSeconds != 7200 {
		t.Errorf("deadline %d, want 7200", *job.Spec.ActiveDeadlineSeconds)
	}
	// The simulator needs no GPU: none asked.
	c2, p2 := loadCampaign(t, testCampaign)
	job2, _, _ := Manifests(Spec{Campaign: c2, Run: p2.Runs[0], Attempt: p2.Runs[0].ID, Image: "i"})
	if _, ok := job2.Spec.Template.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]; ok {
		t.Error("the simulator's pod asks for a GPU")
	}
}

// In every build the section's own rules (operators, GPUs, ...) are
// validated with positions; Kubernetes' name and quantity rules only in
// the kubernetes build (TestSectionNamesValidated), the one that runs
// Kubernetes sweeps.
func TestSectionValidated(t *testing.T) {
	src := `name: v
profile: benchmark-1.5
out: out
matrix:
  engine: [{kind: sim}]
kubernetes:
  tolerations: [{key: a, operator: Sometimes, effect: NoSchedule}]
  gpus: -1
`
	_, err := campaign.Load([]byte(src), filepath.Join(t.TempDir(), "c.yaml"))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"c.yaml:7:17: kubernetes.tolerations[0]: operator \"Sometimes\": expected Equal or Exists",
		"c.yaml:8:9: kubernetes.gpus: must be 0 or more, got -1",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%s", want, err)
		}
	}
}

// An API error while polling is retried, not fatal: the Jobs go on, and
// nothing is decided without the pods (a Job gone from a failed list is
// not taken as deleted). An unverified copy a killed sweep left is removed.
func TestPollRetriesAPIErrors(t *testing.T) {
	c, p := loadCampaign(t, testCampaign)
	p.Runs = p.Runs[:1]
	stale := filepath.Join(c.RunsDir(), "."+p.Runs[0].ID+".copy-123")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	k := newCluster(t)
	fails := 3
	k.client.PrependReactor("get", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if fails > 0 {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "batch", Resource: "jobs"}, "x")
		}
		return false, nil, nil
	})
	k.client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fails > 0 {
			fails--
			return true, nil, apierrors.NewServiceUnavailable("etcd leader changed")
		}
		return false, nil, nil
	})
	var log bytes.Buffer
	res, err := k.executor().Run(context.Background(), c, p, campaign.Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Done != 1 || !strings.Contains(log.String(), "etcd leader changed (try 1 of 10;") {
		t.Errorf("summary %s\n%s", res.Summary, log.String())
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("the unverified copy is still there")
	}
}

// LabelValue keeps valid values and makes others valid and distinct.
func TestLabelValue(t *testing.T) {
	long := strings.Repeat("a", 70)
	for _, tc := range []struct{ in, want string }{
		{"kt", "kt"},
		{"sim-sim-llm-8b-r1-81cb2dba", "sim-sim-llm-8b-r1-81cb2dba"},
		{long, strings.Repeat("a", 50) + "-" + shortHash(long)},
		{"-x-", "x-" + shortHash("-x-")},
	} {
		if got := LabelValue(tc.in); got != tc.want {
			t.Errorf("LabelValue(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// --retry-failed runs a failed run again as a new Job, into a new
// directory (<id>.try2); without it the failed run is skipped.
func TestRetryFailedNewAttempt(t *testing.T) {
	c, p := loadCampaign(t, testCampaign)
	p.Runs = p.Runs[:1]
	r := p.Runs[0]
	w, err := archive.Create(filepath.Join(c.RunsDir(), r.ID), record.Meta{RunID: r.ID, Status: record.StatusFailed, Reason: "kubernetes: OOMKilled", StartedAt: 1, EndedAt: 2})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	for _, retry := range []bool{false, true} {
		k := newCluster(t)
		var created []string
		k.client.PrependReactor("create", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
			created = append(created, a.(k8stesting.CreateAction).GetObject().(*batchv1.Job).Annotations[AnnotationAttempt])
			return false, nil, nil
		})
		var log bytes.Buffer
		if _, err := k.executor().Run(context.Background(), c, p, campaign.Options{Log: &log, RetryFailed: retry}); err != nil {
			t.Fatal(err)
		}
		want := []string(nil)
		if retry {
			want = []string{r.ID + ".try2"}
		}
		if fmt.Sprint(created) != fmt.Sprint(want) {
			t.Errorf("retry %v: jobs for %v, want %v\n%s", retry, created, want, log.String())
		}
	}
	if _, err := archive.Load(filepath.Join(c.RunsDir(), r.ID+".try2")); err != nil {
		t.Errorf("retried run's archive: %v", err)
	}
}

// runningTar is a packed archive whose run.json still says running: the
// run was killed before it wrote how it ended.
func runningTar(t *testing.T, top string) []byte {
	t.Helper()
	dir := t.TempDir()
	w, err := archive.Create(filepath.Join(dir, top), record.Meta{RunID: top, StartedAt: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: top + "/", Typeflag: tar.TypeDir, Mode: 0o755})
	entries, _ := os.ReadDir(filepath.Join(dir, top))
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, top, e.Name()))
		_ = tw.WriteHeader(&tar.Header{Name: top + "/" + e.Name(), Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b))})
		_, _ = tw.Write(b)
	}
	_ = tw.Close()
	w.Close()
	return buf.Bytes()
}

// A run killed in its pod by the memory limit (the kernel kills the run,
// not the container's shell, so the kubelet cannot say OOMKilled) is
// recorded failed, OOMKilled, from the container's cgroup; the archive it
// left (run.json still says running) is kept aside, not taken as a run.
func TestKilledRunRecorded(t *testing.T) {
	for _, tc := range []struct{ exit, want string }{
		{"137 1", "kubernetes: OOMKilled: the run was killed by its container's memory limit (exit 137, 1 OOM kills) before it wrote its status"},
		{"137 0", "kubernetes: the run was killed by signal 9 (exit 137) before it wrote its status"},
	} {
		c, p := loadCampaign(t, testCampaign)
		p.Runs = p.Runs[:1]
		k := newCluster(t)
		k.exit = tc.exit
		k.tarFor = func(attempt string) []byte { return runningTar(t, attempt) }
		var log bytes.Buffer
		res, err := k.executor().Run(context.Background(), c, p, campaign.Options{Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		as, _ := c.Attempts(p.Runs[0])
		if res.Summary.Failed != 1 || len(as) != 1 || !strings.HasPrefix(as[0].Reason, tc.want) {
			t.Fatalf("exit %q: summary %s, attempts %+v\n%s", tc.exit, res.Summary, as, log.String())
		}
		if _, err := os.Stat(filepath.Join(c.Dir, "kubernetes", "killed", p.Runs[0].ID, archive.RunFile)); err != nil {
			t.Errorf("the killed run's archive is not kept aside: %v", err)
		}
	}
}

// With kubernetes.pvc, what the run of a failed pod (evicted) wrote on the
// claim is brought back through a pod of its own, kept aside in
// OUT/kubernetes/killed, and named in the record; that pod is deleted.
func TestFailedPodArchiveFromPVC(t *testing.T) {
	c, p := loadCampaign(t, strings.Replace(testCampaign, "kubernetes: {", "kubernetes: {pvc: archives, ", 1))
	p.Runs = p.Runs[:1]
	k := newCluster(t)
	k.podFor = func(_ *batchv1.Job, pod *corev1.Pod) {
		pod.Status.Phase = corev1.PodFailed
		pod.Status.Reason = "Evicted"
		pod.Status.Message = "The node was low on resource: ephemeral-storage."
		pod.Status.ContainerStatuses[0].Ready = false
	}
	k.tarFor = func(attempt string) []byte { return runningTar(t, attempt) }
	var pvcPods []string
	k.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		pvcPods = append(pvcPods, pod.Name)
		if v := pod.Spec.Volumes[0].PersistentVolumeClaim; v == nil || v.ClaimName != "archives" {
			t.Errorf("pod %s does not mount the PVC: %+v", pod.Name, pod.Spec.Volumes)
		}
		pod.Status.Phase = corev1.PodRunning
		return true, pod, k.client.Tracker().Add(pod)
	})
	var log bytes.Buffer
	res, err := k.executor().Run(context.Background(), c, p, campaign.Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	as, _ := c.Attempts(p.Runs[0])
	aside := filepath.Join(c.Dir, "kubernetes", "killed", p.Runs[0].ID)
	want := "kubernetes: Evicted: The node was low on resource: ephemeral-storage.; the archive it left is in " + aside
	if res.Summary.Failed != 1 || len(as) != 1 || as[0].Reason != want {
		t.Fatalf("summary %s, attempts %+v, want reason %q\n%s", res.Summary, as, want, log.String())
	}
	if _, err := archive.ReadMeta(filepath.Join(aside, archive.RunFile)); err != nil {
		t.Errorf("the archive from the PVC: %v", err)
	}
	if len(pvcPods) != 1 {
		t.Fatalf("pods reading the PVC: %v", pvcPods)
	}
	if _, err := k.client.CoreV1().Pods("bench").Get(context.Background(), pvcPods[0], metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the pod reading the PVC is still there: %v", err)
	}
}

// The image (--image, not from the campaign file) passes the one rule of
// every value that reaches a manifest, as do the campaign's values when
// the campaign was changed after it was loaded: no Job is described nor
// created with a line break or a NUL in it.
func TestHostileValuesNeverReachManifest(t *testing.T) {
	c, p := loadCampaign(t, testCampaign)
	r := p.Runs[0]
	for _, img := range []string{"joulebench:test\nwhoami", "joulebench:test\r", "joulebench\x00:test"} {
		e := &Executor{Image: img}
		if _, err := e.Describe(c, r, r.ID, "jb"); err == nil || !strings.Contains(err.Error(), "--image: ") {
			t.Errorf("image %q: Describe: %v", img, err)
		}
	}
	c.Kubernetes.Tolerations = []campaign.Toleration{{Key: "gpu", Value: "yes\nno", Effect: "NoSchedule"}}
	k := newCluster(t)
	_, err := k.executor().Run(context.Background(), c, p, campaign.Options{})
	if err == nil || !strings.Contains(err.Error(), "kubernetes.tolerations[0].value") {
		t.Errorf("Run: %v", err)
	}
	if jobs := k.jobs(t, "bench"); len(jobs) != 0 {
		t.Errorf("%d jobs created", len(jobs))
	}
}

// A pod whose image lacks the tools of the archive hand-back: the run
// goes on, but the readiness probe (test -e .../exit) errors with
// "executable file not found" and the pod is never ready. The run is
// failed with the kubelet's message once probe_timeout has passed,
// instead of the sweep waiting for ever; a probe that merely fails (the
// run not ended yet) is waited for.
func TestProbeCannotRunFailsRun(t *testing.T) {
	src := strings.Replace(testCampaign, "schedule_timeout: 1m}", "schedule_timeout: 1m, probe_timeout: 1m}", 1)
	c, p := loadCampaign(t, src)
	p.Runs = p.Runs[:2]
	k := newCluster(t)
	k.podFor = func(job *batchv1.Job, pod *corev1.Pod) {
		pod.Status.ContainerStatuses[0].Ready = false
		msg := "Readiness probe failed: " // the run not ended yet: its probe fails, it does not error
		if job.Annotations[AnnotationRun] == p.Runs[0].ID {
			msg = `Readiness probe errored: rpc error: code = Unknown desc = failed to exec in container: failed to start exec "1f2e": ` +
				`OCI runtime exec failed: exec failed: unable to start container process: exec: "test": executable file not found in $PATH: unknown`
		}
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: pod.Name + ".17a", Namespace: pod.Namespace},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: pod.Name, Namespace: pod.Namespace},
			Reason:         "Unhealthy", Type: corev1.EventTypeWarning, Message: msg, Count: 40,
		}
		if err := k.client.Tracker().Add(ev); err != nil {
			t.Error(err)
		}
	}
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	reads := 0
	e := k.executor()
	e.Now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		if reads++; reads > 4 {
			now = now.Add(20 * time.Second)
		}
		return now
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log syncBuf
	done := make(chan error, 1)
	var res campaign.Result
	go func() {
		var err error
		res, err = e.Run(ctx, c, p, campaign.Options{Log: &log})
		done <- err
	}()
	// The first run fails; the second is still followed: the sweep is
	// stopped once the first is recorded.
	deadline := time.After(20 * time.Second)
	for !strings.Contains(log.String(), p.Runs[0].ID+": failed:") {
		select {
		case <-deadline:
			cancel()
			<-done
			t.Fatalf("the run whose probe cannot run was not failed:\n%s", log.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	as, _ := c.Attempts(p.Runs[0])
	want := "kubernetes: the readiness probe cannot run in the image joulebench:test for 1m0s"
	if len(as) != 1 || !strings.HasPrefix(as[0].Reason, want) || !strings.Contains(as[0].Reason, `exec: "test": executable file not found in $PATH`) {
		t.Fatalf("attempts %+v, want a reason starting %q\n%s", as, want, log.String())
	}
	if as2, _ := c.Attempts(p.Runs[1]); len(as2) != 0 {
		t.Errorf("the run whose probe only fails was failed: %+v", as2)
	}
	if !res.Interrupted {
		t.Errorf("result %+v", res)
	}
}

// syncBuf is a log the sweep writes while the test reads it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A bookkeeping error (the failed run's record cannot be written) stops
// the sweep with the error, and deletes no other Job: the run still
// going is left running for the next sweep to re-attach to.
func TestBookkeepingErrorKeepsRunningJobs(t *testing.T) {
	c, p := loadCampaign(t, testCampaign)
	k := newCluster(t)
	k.podFor = func(job *batchv1.Job, pod *corev1.Pod) {
		pod.Status.ContainerStatuses[0].Ready = false // still running
		if job.Annotations[AnnotationRun] != p.Runs[0].ID {
			return
		}
		pod.Status.Phase = corev1.PodFailed
		pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}
		// Where its record goes is taken: the record cannot be written.
		if err := os.WriteFile(filepath.Join(c.RunsDir(), job.Annotations[AnnotationAttempt]), []byte("x"), 0o644); err != nil {
			t.Error(err)
		}
	}
	var log bytes.Buffer
	_, err := k.executor().Run(context.Background(), c, p, campaign.Options{Log: &log})
	if err == nil || !strings.Contains(err.Error(), "record the failure") || !strings.Contains(err.Error(), "1 job go on") {
		t.Fatalf("error %v\n%s", err, log.String())
	}
	jobs := k.jobs(t, "bench")
	if len(jobs) != 1 || jobs[0].Annotations[AnnotationRun] != p.Runs[1].ID {
		t.Errorf("jobs left %d, want the running run's", len(jobs))
	}
}

// The API server down for good: the pods' list fails BackendFailures
// times in a row, each said; the sweep stops with the error and leaves
// its Jobs running.
func TestAPIDownLeavesJobs(t *testing.T) {
	c, p := loadCampaign(t, testCampaign)
	k := newCluster(t)
	k.client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd leader changed")
	})
	var log bytes.Buffer
	done := make(chan error, 1)
	go func() {
		_, err := k.executor().Run(context.Background(), c, p, campaign.Options{Log: &log, BackendFailures: 3})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "list pods failed 3 times in a row") || !strings.Contains(err.Error(), "etcd leader changed") {
			t.Fatalf("error %v\n%s", err, log.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the sweep waits for ever on an API that keeps failing")
	}
	if n := len(k.jobs(t, "bench")); n != 2 {
		t.Errorf("%d jobs left, want both", n)
	}
	if n := strings.Count(log.String(), "etcd leader changed (try "); n != 2 {
		t.Errorf("%d failures said, want 2 before the third stops:\n%s", n, log.String())
	}
}

// A run container's log that cannot be kept is said, not dropped.
func TestLogSaveErrorSaid(t *testing.T) {
	c, p := loadCampaign(t, testCampaign)
	p.Runs = p.Runs[:1]
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// OUT/logs is a file: no log can go there.
	if err := os.WriteFile(filepath.Join(c.Dir, "logs"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	k := newCluster(t)
	var log bytes.Buffer
	if _, err := k.executor().Run(context.Background(), c, p, campaign.Options{Log: &log}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "kubernetes: keep the log of pod bench/jb-") {
		t.Errorf("log:\n%s", log.String())
	}
}
