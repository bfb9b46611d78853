// Package kube is the Kubernetes executor of a campaign (`sweep --executor
// kubernetes`): every run of the plan becomes a Job whose pod runs
// `joulebench run` with the run's arguments, labelled with the campaign and
// the run id; the run's archive is streamed out of the pod into
// OUT/runs/<id> (the pod waits until the copy is verified), and a pod that
// fails is recorded in the run's record with Kubernetes' reason.
package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/joulebench/joulebench/campaign"
)

// Labels and annotations of the objects the executor makes.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelCampaign is the campaign's name (a label value: cut and
	// hashed when it is not one).
	LabelCampaign = "joulebench.io/campaign"
	// LabelCampaignDir tells apart two campaigns of one name in different
	// directories: a hash of the campaign directory's absolute path.
	LabelCampaignDir = "joulebench.io/campaign-dir"
	// LabelRun is the run id (as LabelCampaign).
	LabelRun = "joulebench.io/run"
	// AnnotationRun and AnnotationAttempt are the run id and the attempt's
	// directory name, exactly.
	AnnotationRun     = "joulebench.io/run"
	AnnotationAttempt = "joulebench.io/attempt"
)

// Paths inside a run's pod.
const (
	// WorkDir holds the archives (an emptyDir, or the campaign's PVC).
	WorkDir = "/joulebench/work"
	// StateDir holds the handshake files: exit (the run's exit status,
	// written when it ended), archive.tar (the archive packed for the
	// copy), release (the sweep has the archive: the pod may end).
	StateDir = "/joulebench/state"
	// ContainerName is the run's container.
	ContainerName = "run"
	// DefaultImage is the project's released image.
	DefaultImage = campaign.DefaultKubeImage
	// DefaultHold is how long a pod whose run ended waits for the sweep
	// to copy its archive (a sweep killed and not restarted).
	DefaultHold = 24 * 60 * 60 // seconds
)

// Spec is what makes one run's Job.
type Spec struct {
	Campaign *campaign.Campaign
	Run      campaign.Run
	// Attempt is the archive directory's name (runs/<Attempt>).
	Attempt string
	// Image is the joulebench image; PullPolicy its pull policy ("":
	// Kubernetes' default, Always for a :latest tag, else IfNotPresent).
	Image      string
	PullPolicy corev1.PullPolicy
	// Hold is how long the pod waits for the copy (seconds, 0: DefaultHold).
	Hold int
}

var dnsUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

func shortHash(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:])[:10]
}

// LabelValue is s when it is a valid label value, else a cut of it with a
// hash, so that distinct values stay distinct.
func LabelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	cut := regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(s, "_")
	if len(cut) > 50 {
		cut = cut[:50]
	}
	cut = strings.Trim(cut, "._-")
	if cut == "" {
		return "h" + shortHash(s)
	}
	return cut + "-" + shortHash(s)
}

// CampaignDirHash is LabelCampaignDir's value of a campaign.
func CampaignDirHash(c *campaign.Campaign) string {
	dir, err := filepath.Abs(c.Dir)
	if err != nil {
		dir = c.Dir
	}
	return shortHash(dir)
}

// JobName is the name of the Job of an attempt: a DNS label of at most 63
// characters, stable for a campaign directory and attempt.
func JobName(c *campaign.Campaign, attempt string) string {
	slug := strings.Trim(dnsUnsafe.ReplaceAllString(strings.ToLower(attempt), "-"), "-")
	if len(slug) > 40 {
		slug = strings.Trim(slug[:40], "-")
	}
	return "jb-" + slug + "-" + shortHash(CampaignDirHash(c), attempt)
}

// SecretName is the name of the Secret holding an attempt's secrets.
func SecretName(job string) string { return job + "-env" }

// Selector selects a campaign's Jobs and pods.
func Selector(c *campaign.Campaign) string {
	return fmt.Sprintf("%s=joulebench,%s=%s,%s=%s", LabelManagedBy, LabelCampaign, LabelValue(c.Name), LabelCampaignDir, CampaignDirHash(c))
}

func labels(c *campaign.Campaign, r campaign.Run) map[string]string {
	return map[string]string{
		LabelManagedBy:   "joulebench",
		LabelCampaign:    LabelValue(c.Name),
		LabelCampaignDir: CampaignDirHash(c),
		LabelRun:         LabelValue(r.ID),
	}
}

// podScript runs joulebench with the arguments that follow it, records
// its exit status, packs the archive and waits (at most HOLD seconds) for
// the sweep to say it has the copy; it exits with the run's status. A
// SIGTERM (the Job deleted) is passed on to the run, which stops cleanly
// and writes its status; the pod then ends without waiting.
const podScript = `set -u
stop=0
# An attempt's directory left on a PVC by a pod that was stopped (Ctrl-C)
# is moved aside: the run never writes into an existing directory.
d=` + WorkDir + `/runs/"$JOULEBENCH_ATTEMPT"
[ -e "$d" ] && mv "$d" "$d.stopped-$(date +%s)"
# The run's typed spec (the campaign's, without secrets) from the Job's
# environment into a file of the pod's own.
(umask 077 && printf '%s' "$JOULEBENCH_SPEC" > ` + StateDir + `/spec.json) || exit 1
joulebench "$@" &
pid=$!
trap 'stop=1; kill -TERM $pid 2>/dev/null' TERM INT
wait $pid; code=$?
while kill -0 $pid 2>/dev/null; do wait $pid; code=$?; done
[ $stop = 1 ] && exit $code
if [ -d ` + WorkDir + `/runs/"$JOULEBENCH_ATTEMPT" ]; then
  tar -C ` + WorkDir + `/runs -cf ` + StateDir + `/archive.tar "$JOULEBENCH_ATTEMPT" 2>` + StateDir + `/tar.err || echo "tar failed" >> ` + StateDir + `/tar.err
fi
# The exit status, and the kernel's OOM kills in this container's memory
# cgroup (v2 memory.events, v1 memory.oom_control): a run killed by the
# memory limit leaves sh going, so the kubelet cannot say OOMKilled.
oom=$(cat /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null | awk '$1 == "oom_kill" { print $2; exit }')
echo "$code ${oom:-0}" > ` + StateDir + `/exit.tmp && mv ` + StateDir + `/exit.tmp ` + StateDir + `/exit
i=0
while [ ! -e ` + StateDir + `/release ] && [ $i -lt "$JOULEBENCH_HOLD" ] && [ $stop = 0 ]; do sleep 1; i=$((i+1)); done
exit $code
`

// Manifests are the Job of an attempt and, when the run has secrets, the
// Secret its environment references (Data set: the values are only in
// this object, never in the Job).
func Manifests(s Spec) (*batchv1.Job, *corev1.Secret, error) {
	c, r := s.Campaign, s.Run
	k := c.Kubernetes
	// The campaign's values and the image pass the one rule of every
	// value that reaches a script or a manifest.
	if err := c.CheckScriptValues("--image", s.Image); err != nil {
		return nil, nil, err
	}
	name := JobName(c, s.Attempt)
	podDir := path.Join(WorkDir, "runs", s.Attempt)
	flags, secrets := campaign.SplitSecrets(r.Args(podDir))
	if isFile(flags[1]) {
		return nil, nil, fmt.Errorf("profile %s is a file on this machine: the Kubernetes executor runs built-in profiles (a file needs to be in the image)", flags[1])
	}
	// The run is handed its typed spec, as local and Slurm runs are; the
	// secrets, never in it, come from the Secret below.
	spec, err := c.SpecJSON(r)
	if err != nil {
		return nil, nil, err
	}
	args := r.SpecArgs(StateDir+"/spec.json", podDir)
	hold := s.Hold
	if hold <= 0 {
		hold = DefaultHold
	}
	lb := labels(c, r)
	ann := map[string]string{AnnotationRun: r.ID, AnnotationAttempt: s.Attempt}
	env := []corev1.EnvVar{
		{Name: "JOULEBENCH_ATTEMPT", Value: s.Attempt},
		{Name: "JOULEBENCH_HOLD", Value: fmt.Sprint(hold)},
		{Name: "JOULEBENCH_SPEC", Value: string(spec)},
	}
	var secret *corev1.Secret
	if len(secrets) > 0 {
		secret = &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: SecretName(name), Namespace: k.NamespaceName(), Labels: lb, Annotations: ann},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{},
		}
		for _, kv := range secrets {
			n, v, _ := strings.Cut(kv, "=")
			secret.Data[n] = []byte(v)
			env = append(env, corev1.EnvVar{Name: n, ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret.Name}, Key: n},
			}})
		}
	}
	res, err := resources(c, r)
	if err != nil {
		return nil, nil, err
	}
	work := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	if k.PVC != "" {
		work = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: k.PVC}}
	}
	zero, one := int32(0), int32(1)
	grace := int64(120)
	pod := corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		ServiceAccountName:            k.ServiceAccount,
		NodeSelector:                  k.NodeSelector,
		Tolerations:                   tolerations(k.Tolerations),
		TerminationGracePeriodSeconds: &grace,
		Containers: []corev1.Container{{
			Name:            ContainerName,
			Image:           s.Image,
			ImagePullPolicy: s.PullPolicy,
			Command:         append([]string{"/bin/sh", "-c", podScript, "joulebench"}, args...),
			Env:             env,
			Resources:       res,
			VolumeMounts: []corev1.VolumeMount{
				// On a PVC each campaign directory has a directory of
				// its own; an emptyDir is the pod's alone.
				{Name: "work", MountPath: WorkDir, SubPath: subPath(c)},
				{Name: "state", MountPath: StateDir},
			},
			// Ready once the run has ended and its archive is packed:
			// the sweep copies it then.
			ReadinessProbe: &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-e", StateDir + "/exit"}}},
				PeriodSeconds: 1, FailureThreshold: 1,
			},
		}},
		Volumes: []corev1.Volume{
			{Name: "work", VolumeSource: work},
			{Name: "state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
	}
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.NamespaceName(), Labels: lb, Annotations: ann},
		Spec: batchv1.JobSpec{
			// One pod: a run that fails is the campaign's to retry
			// (--retry-failed), into a new directory.
			BackoffLimit: &zero,
			Parallelism:  &one,
			Completions:  &one,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lb, Annotations: ann},
				Spec:       pod,
			},
		},
	}
	if d := k.Deadline.D(); d > 0 {
		secs := int64(d.Seconds())
		job.Spec.ActiveDeadlineSeconds = &secs
	}
	return job, secret, nil
}

func tolerations(ts []campaign.Toleration) []corev1.Toleration {
	var out []corev1.Toleration
	for _, t := range ts {
		out = append(out, corev1.Toleration{
			Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value,
			Effect: corev1.TaintEffect(t.Effect), TolerationSeconds: t.TolerationSeconds,
		})
	}
	return out
}

// resources are the container's requests and limits, with the run's GPUs
// (Campaign.KubeGPUs) as a limit (and request) of the GPU resource.
func resources(c *campaign.Campaign, r campaign.Run) (corev1.ResourceRequirements, error) {
	var out corev1.ResourceRequirements
	conv := func(m map[string]string) (corev1.ResourceList, error) {
		if len(m) == 0 {
			return nil, nil
		}
		l := corev1.ResourceList{}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			q, err := resource.ParseQuantity(m[k])
			if err != nil {
				return nil, fmt.Errorf("kubernetes.resources %s: %w", k, err)
			}
			l[corev1.ResourceName(k)] = q
		}
		return l, nil
	}
	var err error
	if out.Requests, err = conv(c.Kubernetes.Resources.Requests); err != nil {
		return out, err
	}
	if out.Limits, err = conv(c.Kubernetes.Resources.Limits); err != nil {
		return out, err
	}
	if n := c.KubeGPUs(r); n > 0 {
		if out.Limits == nil {
			out.Limits = corev1.ResourceList{}
		}
		out.Limits[corev1.ResourceName(c.Kubernetes.GPUResourceName())] = *resource.NewQuantity(int64(n), resource.DecimalSI)
	}
	return out, nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// subPath is where a campaign's archives go on its PVC ("" without one):
// joulebench/<campaign>-<hash of the campaign directory>.
func subPath(c *campaign.Campaign) string {
	if c.Kubernetes.PVC == "" {
		return ""
	}
	return "joulebench/" + LabelValue(c.Name) + "-" + CampaignDirHash(c)
}
