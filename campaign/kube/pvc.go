package kube

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joulebench/joulebench/campaign"
)

// rescueWait bounds how long the pod that reads a PVC may take to start.
const rescueWait = 2 * time.Minute

// rescue brings back what the run of a failed pod left on the campaign's
// PVC (kubernetes.pvc): a pod of its own mounts the claim, packs the
// attempt's directory and hands it over as a run's pod does; the copy
// goes to OUT/kubernetes/killed/<attempt>, kept for inspection and never
// taken as a run. It returns that directory ("" when the run left
// nothing there).
func (e *Executor) rescue(ctx context.Context, c *campaign.Campaign, t *tracked, o campaign.Options) (string, error) {
	k := c.Kubernetes
	ns := k.NamespaceName()
	lb := map[string]string{LabelManagedBy: "joulebench", LabelCampaign: LabelValue(c.Name), LabelCampaignDir: CampaignDirHash(c)}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: t.job + "-pvc", Namespace: ns, Labels: lb,
			Annotations: map[string]string{AnnotationRun: t.run.ID, AnnotationAttempt: t.attempt}},
		Spec: corev1.PodSpec{
			RestartPolicy:      corev1.RestartPolicyNever,
			ServiceAccountName: k.ServiceAccount,
			NodeSelector:       k.NodeSelector,
			Tolerations:        tolerations(k.Tolerations),
			Containers: []corev1.Container{{
				Name: ContainerName, Image: e.image(), ImagePullPolicy: e.PullPolicy,
				Command:      []string{"/bin/sh", "-c", "i=0; while [ ! -e /tmp/release ] && [ $i -lt 600 ]; do sleep 1; i=$((i+1)); done"},
				VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: WorkDir, SubPath: subPath(c)}},
			}},
			Volumes: []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: k.PVC},
			}}},
		},
	}
	if _, err := e.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create pod %s/%s to read the PVC: %w", ns, pod.Name, err)
	}
	defer func() {
		dctx, cancel := campaign.CallContext(context.Background())
		defer cancel()
		if derr := e.Client.CoreV1().Pods(ns).Delete(dctx, pod.Name, metav1.DeleteOptions{}); derr != nil && !apierrors.IsNotFound(derr) {
			fmt.Fprintf(o.Log, "kubernetes: delete pod %s/%s: %v\n", ns, pod.Name, derr)
		}
	}()
	deadline := e.now().Add(rescueWait)
	for {
		p, err := e.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning {
			break
		}
		if err == nil && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded) {
			return "", fmt.Errorf("pod %s/%s reading the PVC ended (%s)", ns, pod.Name, p.Status.Phase)
		}
		if e.now().After(deadline) || ctx.Err() != nil {
			return "", fmt.Errorf("pod %s/%s reading the PVC did not start in %s", ns, pod.Name, rescueWait)
		}
		select {
		case <-ctx.Done():
		case <-time.After(k.PollEvery()):
		}
	}
	var out bytes.Buffer
	dir := path.Join(WorkDir, "runs", t.attempt)
	script := "[ -d " + dir + " ] || { echo none; exit 0; }; tar -C " + WorkDir + "/runs -cf /tmp/a.tar " + t.attempt + " && wc -c < /tmp/a.tar"
	if err := e.Exec(ctx, ns, pod.Name, ContainerName, []string{"sh", "-c", script}, &out); err != nil {
		return "", fmt.Errorf("pack %s on the PVC: %w", t.attempt, err)
	}
	line := strings.TrimSpace(out.String())
	if line == "none" {
		return "", nil
	}
	want, err := strconv.ParseInt(line, 10, 64)
	if err != nil || want <= 0 || want > maxArchiveBytes {
		return "", fmt.Errorf("packed archive size %q on the PVC: not a size", line)
	}
	if err := os.MkdirAll(c.RunsDir(), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(c.RunsDir(), "."+t.attempt+".copy-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := e.stream(ctx, ns, pod.Name, "/tmp/a.tar", want, tmp, t.attempt); err != nil {
		return "", err
	}
	_ = e.Exec(ctx, ns, pod.Name, ContainerName, []string{"touch", "/tmp/release"}, &out)
	aside := filepath.Join(c.Dir, "kubernetes", "killed", t.attempt)
	if err := os.MkdirAll(filepath.Dir(aside), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(tmp, t.attempt), aside); err != nil {
		return "", err
	}
	fmt.Fprintf(o.Log, "    %s: the archive its failed pod left on PVC %s is in %s\n", t.run.ID, k.PVC, aside)
	return aside, nil
}
