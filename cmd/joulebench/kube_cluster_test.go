package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/campaign/kube"
)

// The tests below run campaigns as Jobs on a real cluster: the one
// .ci/k8s/start.sh starts, whose kubeconfig CI exports as
// JOULEBENCH_K8S_KUBECONFIG and whose local joulebench image (made by
// .ci/k8s/load.sh from this tree) as JOULEBENCH_K8S_IMAGE. Without them
// they skip, except under CI=true, where a missing cluster fails them.

// kubeCluster returns the cluster's kubeconfig, the image, a client and
// a namespace of the test's own (deleted at the end).
func kubeCluster(t *testing.T) (kubeconfig, image, ns string, client kubernetes.Interface) {
	t.Helper()
	kubeconfig, image = os.Getenv("JOULEBENCH_K8S_KUBECONFIG"), os.Getenv("JOULEBENCH_K8S_IMAGE")
	if kubeconfig == "" || image == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but JOULEBENCH_K8S_KUBECONFIG or JOULEBENCH_K8S_IMAGE is unset: .ci/k8s/start.sh and load.sh did not run")
		}
		t.Skip("no Kubernetes cluster (JOULEBENCH_K8S_KUBECONFIG and JOULEBENCH_K8S_IMAGE, set by .ci/run)")
	}
	if testing.Short() {
		t.Skip("runs the simulator as Jobs on a cluster")
	}
	kubeHelperEnv(t) // built before any run's time limit starts
	cfg, err := kube.RESTConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err = kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "jb-test-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.CoreV1().Namespaces().Delete(context.Background(), n.Name, metav1.DeleteOptions{}) })
	// The namespace's default service account comes from the controller
	// manager, a moment after the namespace.
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := client.CoreV1().ServiceAccounts(n.Name).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s has no default service account after 1m", n.Name)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return kubeconfig, image, n.Name, client
}

// kubeCampaign is smallCampaign run in namespace ns, with extra run args.
func kubeCampaign(t *testing.T, ns string, extraArgs ...string) string {
	return kubeCampaignWith(t, ns, "", extraArgs...)
}

// kubeCampaignWith is kubeCampaign with more keys in its kubernetes section.
func kubeCampaignWith(t *testing.T, ns, section string, extraArgs ...string) string {
	t.Helper()
	dir := t.TempDir()
	src := smallCampaign + fmt.Sprintf("kubernetes: {namespace: %s, poll: 300ms%s}\n", ns, section)
	for _, a := range extraArgs {
		src = strings.Replace(src, "args: [", "args: ["+a+", ", 1)
	}
	if err := os.WriteFile(filepath.Join(dir, "campaign.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func kubeSweep(t *testing.T, dir, kubeconfig, image string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"sweep", "campaign.yaml", "--executor", "kubernetes", "--kubeconfig", kubeconfig, "--image", image}, args...)...)
	cmd.Dir = dir
	cmd.Env = kubeChildEnv(t)
	return cmd
}

// A two-configuration simulator campaign runs as Jobs; both archives come
// back complete and compare reads them; --dry-run prints the Jobs.
func TestKubernetesSweep(t *testing.T) {
	kubeconfig, image, ns, client := kubeCluster(t)
	dir := kubeCampaign(t, ns)
	b, err := kubeSweep(t, dir, kubeconfig, image, "--dry-run").CombinedOutput()
	if err != nil || strings.Count(string(b), "kind: Job") != 2 || !strings.Contains(string(b), "image: "+image) {
		t.Fatalf("dry run: %v\n%s", err, b)
	}
	cmd := kubeSweep(t, dir, kubeconfig, image)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd = exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	cmd.Dir, cmd.Env = dir, kubeChildEnv(t)
	b, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubernetes sweep: %v\n%s", err, b)
	}
	s := string(b)
	if !strings.Contains(s, "2 complete runs compared") || !strings.Contains(s, "sim-llm-70b") || strings.Count(s, "copied from pod") != 2 {
		t.Errorf("kubernetes sweep output:\n%s", s)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "out", "runs", "*"))
	if len(runs) != 2 {
		t.Fatalf("archives %v, want 2", runs)
	}
	for _, r := range runs {
		if _, err := archive.Load(r); err != nil {
			t.Errorf("%s: %v", r, err)
		}
	}
	noJobsLeft(t, client, ns)
}

// noJobsLeft waits for the Jobs (deleted in the foreground: they go once
// their pods are gone) to be gone.
func noJobsLeft(t *testing.T, client kubernetes.Interface, ns string) {
	t.Helper()
	waitKube(t, time.Minute, "jobs gone", func() bool {
		jobs, err := client.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{})
		return err == nil && len(jobs.Items) == 0
	})
}

// waitKube polls cond until it holds or d passes.
func waitKube(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s", what, d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func runningPods(client kubernetes.Interface, ns string) []corev1.Pod {
	l, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// A credential given to the campaign is in no object's spec but its
// Secret's (read back from the API: Jobs, pods, events); Ctrl-C then
// deletes the Jobs, their pods and Secrets.
func TestKubernetesSecretsAndInterrupt(t *testing.T) {
	kubeconfig, image, ns, client := kubeCluster(t)
	const cred = "pw-K8S-SECRET-4711"
	dir := kubeCampaign(t, ns, "--hf-endpoint, 'https://u:"+cred+"@127.0.0.1:1'")
	cmd := kubeSweep(t, dir, kubeconfig, image)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	waitKube(t, 3*time.Minute, "a running pod\n"+out.String(), func() bool { return len(runningPods(client, ns)) > 0 })
	ctx := context.Background()
	var dump []any
	jobs, err := client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(jobs.Items) != 2 {
		t.Fatalf("jobs: %v, %d", err, len(jobs.Items))
	}
	pods, _ := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	events, _ := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	cms, _ := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	dump = append(dump, jobs, pods, events, cms)
	for _, o := range dump {
		b, _ := json.Marshal(o)
		if strings.Contains(string(b), cred) {
			t.Errorf("the credential is in a %T read back from the API", o)
		}
	}
	secrets, _ := client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	found := 0
	for _, s := range secrets.Items {
		if strings.Contains(string(s.Data["JOULEBENCH_HF_ENDPOINT"]), cred) {
			found++
		}
	}
	if found != 2 {
		t.Errorf("%d secrets hold the credential, want one per job", found)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
		t.Fatalf("interrupted sweep: %v, want exit %d\n%s", err, exitInterrupted, out.String())
	}
	waitKube(t, 2*time.Minute, "jobs, pods and secrets gone after Ctrl-C", func() bool {
		j, _ := client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		p, _ := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		s, _ := client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=joulebench"})
		return j != nil && p != nil && s != nil && len(j.Items)+len(p.Items)+len(s.Items) == 0
	})
}

// A pod deleted mid-run (by someone else than the sweep) is recorded
// failed, with the reason, in its run's record.
func TestKubernetesPodKilledRecorded(t *testing.T) {
	kubeconfig, image, ns, client := kubeCluster(t)
	dir := kubeCampaign(t, ns)
	cmd := kubeSweep(t, dir, kubeconfig, image)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	var victim corev1.Pod
	waitKube(t, 3*time.Minute, "a running pod\n"+out.String(), func() bool {
		ps := runningPods(client, ns)
		if len(ps) > 0 {
			victim = ps[0]
		}
		return len(ps) > 0
	})
	zero := int64(0)
	if err := client.CoreV1().Pods(ns).Delete(context.Background(), victim.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitFailure {
			t.Fatalf("sweep: %v, want exit %d (a run failed)\n%s", err, exitFailure, out.String())
		}
	case <-time.After(8 * time.Minute):
		t.Fatalf("sweep did not end\n%s", out.String())
	}
	attempt := victim.Annotations[kube.AnnotationAttempt]
	m, err := archive.ReadMeta(filepath.Join(dir, "out", "runs", attempt, archive.RunFile))
	if err != nil {
		t.Fatalf("record of %s: %v\n%s", attempt, err, out.String())
	}
	if m.Status != record.StatusFailed || !strings.HasPrefix(m.Reason, "kubernetes: ") {
		t.Errorf("record: %s %q", m.Status, m.Reason)
	}
	t.Logf("recorded reason: %s", m.Reason)
}

// A sweep killed with SIGKILL leaves its Jobs going; the restarted sweep
// creates none again, re-attaches to them by label, brings both archives
// back and compares them.
func TestKubernetesKilledSweepReattaches(t *testing.T) {
	kubeconfig, image, ns, client := kubeCluster(t)
	dir := kubeCampaign(t, ns)
	cmd := kubeSweep(t, dir, kubeconfig, image)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitKube(t, 2*time.Minute, "both jobs created\n"+out.String(), func() bool { return strings.Count(out.String(), "created ") >= 2 })
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	again := kubeSweep(t, dir, kubeconfig, image)
	again = exec.CommandContext(ctx, again.Path, again.Args[1:]...)
	again.Dir, again.Env = dir, kubeChildEnv(t)
	b, err := again.CombinedOutput()
	if err != nil {
		t.Fatalf("restarted sweep: %v\n%s", err, b)
	}
	s := string(b)
	if strings.Contains(s, "created ") || strings.Count(s, "re-attach ") != 2 || !strings.Contains(s, "2 complete runs compared") {
		t.Errorf("restarted sweep:\n%s", s)
	}
	noJobsLeft(t, client, ns)
}

// A run whose container's memory limit is too small is killed by the
// kernel and recorded failed, OOMKilled; so is a pod whose image is not
// on the node (ErrImageNeverPull, or the pull's back-off).
func TestKubernetesFailureReasons(t *testing.T) {
	kubeconfig, image, ns, _ := kubeCluster(t)
	for _, tc := range []struct {
		name, section, image, want string
	}{
		{"oom", ", resources: {limits: {memory: 24Mi}}", image, "kubernetes: OOMKilled: "},
		// A registry on this machine's loopback that nothing serves: the
		// pull is refused here, no registry elsewhere is asked.
		{"image", "", "127.0.0.1:1/joulebench:absent", "kubernetes: ImagePullBackOff: image 127.0.0.1:1/joulebench:absent: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := kubeCampaignWith(t, ns, tc.section)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := kubeSweep(t, dir, kubeconfig, tc.image)
			cmd = exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
			cmd.Dir, cmd.Env = dir, kubeChildEnv(t)
			b, err := cmd.CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitFailure {
				t.Fatalf("sweep: %v, want exit %d\n%s", err, exitFailure, b)
			}
			runs, _ := filepath.Glob(filepath.Join(dir, "out", "runs", "*", archive.RunFile))
			if len(runs) != 2 {
				t.Fatalf("records %v, want 2\n%s", runs, b)
			}
			for _, r := range runs {
				m, err := archive.ReadMeta(r)
				if err != nil {
					t.Fatal(err)
				}
				if m.Status != record.StatusFailed || !strings.HasPrefix(m.Reason, tc.want) {
					t.Errorf("%s: %s %q, want failed %q...", r, m.Status, m.Reason, tc.want)
				}
				t.Logf("recorded reason: %s", m.Reason)
			}
		})
	}
}

// With kubernetes.pvc the runs write their archives on the claim: a
// complete run's comes back as usual; a run whose pod is deleted mid-run
// is recorded failed, and what it wrote on the claim is brought back
// beside the runs (OUT/kubernetes/killed/<id>), named in the record.
func TestKubernetesPVC(t *testing.T) {
	kubeconfig, image, ns, client := kubeCluster(t)
	ctx := context.Background()
	// A hostPath volume on the node (this machine), bound to the claim by
	// name: the CI cluster has no provisioner.
	pvName := ns + "-pv"
	host := t.TempDir()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: host}},
		},
	}
	if _, err := client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.CoreV1().PersistentVolumes().Delete(context.Background(), pvName, metav1.DeleteOptions{})
	})
	empty := ""
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "archives", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &empty,
			VolumeName:       pvName,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := kubeCampaignWith(t, ns, ", pvc: archives")
	cmd := kubeSweep(t, dir, kubeconfig, image)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	// The second run's pod is deleted once its run has written for a
	// while (the first run's pod has come and gone by then or not: both
	// runs' Jobs start at once).
	var victim corev1.Pod
	waitKube(t, 3*time.Minute, "the 70b run's pod running\n"+out.String(), func() bool {
		for _, p := range runningPods(client, ns) {
			if strings.Contains(p.Name, "70b") {
				victim = p
				return true
			}
		}
		return false
	})
	time.Sleep(4 * time.Second)
	zero := int64(0)
	if err := client.CoreV1().Pods(ns).Delete(ctx, victim.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitFailure {
			t.Fatalf("sweep: %v, want exit %d (a run failed)\n%s", err, exitFailure, out.String())
		}
	case <-time.After(8 * time.Minute):
		t.Fatalf("sweep did not end\n%s", out.String())
	}
	attempt := victim.Annotations[kube.AnnotationAttempt]
	m, err := archive.ReadMeta(filepath.Join(dir, "out", "runs", attempt, archive.RunFile))
	if err != nil {
		t.Fatalf("record of %s: %v\n%s", attempt, err, out.String())
	}
	aside := filepath.Join("out", "kubernetes", "killed", attempt)
	if m.Status != record.StatusFailed || !strings.HasSuffix(m.Reason, "; the archive it left is in "+aside) {
		t.Errorf("record: %s %q, want the archive left on the PVC named\n%s", m.Status, m.Reason, out.String())
	}
	if _, err := archive.ReadMeta(filepath.Join(dir, aside, archive.RunFile)); err != nil {
		t.Errorf("the archive from the PVC: %v", err)
	}
	complete, _ := filepath.Glob(filepath.Join(dir, "out", "runs", "*8b*"))
	if len(complete) != 1 {
		t.Fatalf("8b archives %v", complete)
	}
	if _, err := archive.Load(complete[0]); err != nil {
		t.Errorf("the other run's archive, written on the PVC: %v", err)
	}
}

// --dry-run needs no cluster (and the default binary hands it to
// joulebench-kube, as every Kubernetes command): it prints each run's Job (the image given,
// the run's typed spec in its environment, the Secret's keys) and no
// credential.
func TestKubernetesDryRunNeedsNoCluster(t *testing.T) {
	dir := t.TempDir()
	src := strings.Replace(smallCampaign, "args: [", "args: [--hf-endpoint, 'https://u:pw-DRY-4711@h:1', ", 1)
	if err := os.WriteFile(filepath.Join(dir, "campaign.yaml"), []byte(src+"kubernetes: {namespace: bench}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "sweep", "campaign.yaml", "--executor", "kubernetes", "--image", "example.com/jb:1", "--dry-run")
	cmd.Dir, cmd.Env = dir, append(kubeChildEnv(t), "KUBECONFIG="+filepath.Join(dir, "absent"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	out, errOut, code := stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"executor kubernetes", "kind: Job", "namespace: bench", "image: example.com/jb:1", "- --spec", "name: JOULEBENCH_SPEC", "\"sim-llm-70b\"", "holds: JOULEBENCH_HF_ENDPOINT"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "kind: Job"); n != 2 {
		t.Errorf("%d jobs, want 2", n)
	}
	if strings.Contains(out+errOut, "pw-DRY-4711") {
		t.Errorf("the credential is in the dry run:\n%s", out)
	}
}
