package kube

import (
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// phase is where one attempt's Job stands, as the executor acts on it.
type phase int

const (
	// waiting: not scheduled, pulling, running: nothing to do yet.
	waiting phase = iota
	// ready: the run ended and its archive is packed: copy it.
	ready
	// failed: the pod will not give an archive; reason says why.
	failed
)

// pullFailures are the container waiting reasons that mean the image
// will not come: the run is failed at once (ErrImagePull alone may be a
// transient first try; its back-off is not).
var pullFailures = map[string]bool{
	"ImagePullBackOff":  true,
	"ErrImageNeverPull": true,
	"InvalidImageName":  true,
}

// configFailures are waiting reasons a pod does not recover from.
var configFailures = map[string]bool{
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
}

// observe reads a Job and its pod (nil when there is none) into what to
// do, and the failure reason when the run failed. pendingSince is when
// the pod was first seen unschedulable (zero: not yet); scheduleWait is
// how long it may stay so.
func observe(job *batchv1.Job, pod *corev1.Pod, now, pendingSince time.Time, scheduleWait time.Duration) (phase, string) {
	jobFailed, jobWhy, deadline := jobFailure(job)
	if jobFailed && pod != nil {
		if ok, pw := podFailure(pod); ok {
			if deadline {
				jobWhy += "; " + pw
			} else {
				// The pod's own reason (OOMKilled, Evicted) says more
				// than the Job's BackoffLimitExceeded.
				jobWhy = pw
			}
		}
	}
	if deadline {
		// The Job controller deletes the pod: its deletion is the
		// deadline's, not someone else's.
		return failed, jobWhy
	}
	if pod != nil {
		if p, why := observePod(pod, now, pendingSince, scheduleWait); p != waiting {
			return p, why
		}
	}
	if jobFailed {
		return failed, jobWhy
	}
	return waiting, ""
}

// jobFailure is a Job's Failed condition: its reason and message, and
// whether it is the deadline.
func jobFailure(job *batchv1.Job) (bool, string, bool) {
	if job == nil {
		return false, "", false
	}
	for _, c := range job.Status.Conditions {
		if c.Type != batchv1.JobFailed || c.Status != corev1.ConditionTrue {
			continue
		}
		why := "job failed: " + c.Reason
		deadline := c.Reason == batchv1.JobReasonDeadlineExceeded
		if deadline {
			why = "DeadlineExceeded: the Job ran longer than kubernetes.deadline"
		}
		if c.Message != "" {
			why += " (" + oneLine(c.Message) + ")"
		}
		return true, why, deadline
	}
	return false, "", false
}

func observePod(pod *corev1.Pod, now, pendingSince time.Time, scheduleWait time.Duration) (phase, string) {
	switch pod.Status.Phase {
	case corev1.PodFailed:
		_, why := podFailure(pod)
		return failed, why
	case corev1.PodSucceeded:
		// It ended without the sweep's release: it waited its hold out.
		return failed, fmt.Sprintf("pod %s ended before its archive was copied (the sweep was away longer than the pod waits)", pod.Name)
	}
	if pod.DeletionTimestamp != nil {
		return failed, fmt.Sprintf("pod %s deleted while its run went on (not by this sweep)", pod.Name)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != ContainerName {
			continue
		}
		if w := cs.State.Waiting; w != nil && (pullFailures[w.Reason] || configFailures[w.Reason]) {
			return failed, fmt.Sprintf("%s: image %s: %s", w.Reason, cs.Image, oneLine(w.Message))
		}
		if t := cs.State.Terminated; t != nil {
			return failed, terminated(pod, t)
		}
		if cs.Ready && cs.State.Running != nil {
			return ready, ""
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			if !pendingSince.IsZero() && now.Sub(pendingSince) >= scheduleWait {
				return failed, fmt.Sprintf("Unschedulable for %s: %s", scheduleWait, oneLine(c.Message))
			}
		}
	}
	return waiting, ""
}

// unschedulable reports whether the pod is pending for want of a node.
func unschedulable(pod *corev1.Pod) bool {
	if pod == nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// podFailure is why a pod failed: the kubelet's reason (Evicted,
// DeadlineExceeded) with its message, else the run container's
// termination (OOMKilled, Error with its exit code).
func podFailure(pod *corev1.Pod) (bool, string) {
	if pod.Status.Reason != "" {
		return true, pod.Status.Reason + ": " + oneLine(pod.Status.Message)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == ContainerName && cs.State.Terminated != nil {
			return true, terminated(pod, cs.State.Terminated)
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return true, "pod " + pod.Name + " disrupted: " + c.Reason + ": " + oneLine(c.Message)
		}
	}
	if pod.Status.Phase == corev1.PodFailed {
		return true, "pod " + pod.Name + " failed (no reason given)"
	}
	return false, ""
}

func terminated(pod *corev1.Pod, t *corev1.ContainerStateTerminated) string {
	why := t.Reason
	if why == "" {
		why = "Terminated"
	}
	s := fmt.Sprintf("%s: container %s of pod %s exited %d", why, ContainerName, pod.Name, t.ExitCode)
	if t.Signal != 0 {
		s += fmt.Sprintf(" (signal %d)", t.Signal)
	}
	if t.Message != "" {
		s += ": " + oneLine(t.Message)
	}
	return s
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 500 {
		s = s[:500] + "..."
	}
	return s
}

// probeCannotRun reports whether a kubelet Unhealthy event's message says
// that the readiness probe could not be run in the container at all (its
// command is not in the image), rather than that it failed (the run has
// not ended yet).
func probeCannotRun(msg string) bool {
	return strings.Contains(msg, "probe") &&
		(strings.Contains(msg, "executable file not found") || strings.Contains(msg, "no such file or directory"))
}

// runningUnready reports whether the run container runs and is not ready.
func runningUnready(pod *corev1.Pod) bool {
	if pod == nil || pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == ContainerName {
			return cs.State.Running != nil && !cs.Ready
		}
	}
	return false
}

// probeFailure is the reason of a run whose pod's readiness probe could
// not run for wait: the kubelet's message (msg).
func probeFailure(pod *corev1.Pod, wait time.Duration, msg string) string {
	image := ""
	for _, c := range pod.Spec.Containers {
		if c.Name == ContainerName {
			image = c.Image
		}
	}
	return fmt.Sprintf("the readiness probe cannot run in the image %s for %s: %s (the archive hand-back needs sh, test, tar, cat and touch in the image; kubernetes.probe_timeout sets the wait)",
		image, wait, oneLine(msg))
}
