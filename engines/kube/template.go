package kube

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// Template is an engine pod's manifest (--k8s-pod), checked: the pod the
// run creates is a copy of Pod with a generated name and the run's labels.
type Template struct {
	// File is where it was read from (for messages).
	File string
	Pod  *corev1.Pod
	// Container is the engine's container (the first), Port its first
	// containerPort, HealthPath the path of its HTTP readiness probe
	// (default /health).
	Container  string
	Port       int
	HealthPath string
	// ServeSim is true when the container runs `joulebench serve-sim`.
	ServeSim bool
}

// ReadTemplate reads and checks a Pod manifest file.
func ReadTemplate(file string) (*Template, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", FlagPod, err)
	}
	return ParseTemplate(file, data)
}

// ParseTemplate decodes a Pod manifest strictly (an unknown or
// mistyped field is an error naming its line) and checks what the
// engine needs of it: kind Pod, one container at least, an image and a
// containerPort on the engine's container.
func ParseTemplate(file string, data []byte) (*Template, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("%s: empty: want a Pod manifest", file)
	}
	if key, line := duplicateKey(&root); line > 0 {
		return nil, fmt.Errorf("%s:%d: duplicate key %q", file, line, key)
	}
	js, err := sigsyaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var pod corev1.Pod
	if err := dec.Decode(&pod); err != nil {
		return nil, fmt.Errorf("%s:%s", file, positioned(&root, err))
	}
	at := func(field string) string {
		if line := lineOf(&root, strings.Split(field, ".")); line > 0 {
			return fmt.Sprintf("%s:%d: %s", file, line, field)
		}
		return fmt.Sprintf("%s: %s", file, field)
	}
	switch {
	case pod.Kind != "" && pod.Kind != "Pod":
		return nil, fmt.Errorf("%s %q: want Pod (the engine is one pod)", at("kind"), pod.Kind)
	case pod.APIVersion != "" && pod.APIVersion != "v1":
		return nil, fmt.Errorf("%s %q: want v1", at("apiVersion"), pod.APIVersion)
	case len(pod.Spec.Containers) == 0:
		return nil, fmt.Errorf("%s: no container: want the engine's container first", at("spec.containers"))
	}
	c := pod.Spec.Containers[0]
	switch {
	case c.Image == "":
		return nil, fmt.Errorf("%s: the engine's container (the first) has no image", at("spec.containers"))
	case len(c.Ports) == 0 || c.Ports[0].ContainerPort <= 0:
		return nil, fmt.Errorf("%s: the engine's container (the first) has no containerPort: the port its API serves on", at("spec.containers"))
	}
	t := &Template{File: file, Pod: &pod, Container: c.Name, Port: int(c.Ports[0].ContainerPort), HealthPath: "/health"}
	if p := c.ReadinessProbe; p != nil && p.HTTPGet != nil && p.HTTPGet.Path != "" {
		t.HealthPath = p.HTTPGet.Path
	}
	t.ServeSim = runsServeSim(append(append([]string{}, c.Command...), c.Args...))
	return t, nil
}

// runsServeSim reports whether a container's command line is joulebench
// serve-sim (directly or through a shell).
func runsServeSim(argv []string) bool {
	for i, a := range argv {
		for _, w := range strings.Fields(a) {
			if w == "serve-sim" && (i > 0 || strings.Contains(a, "joulebench")) {
				return true
			}
		}
	}
	return false
}

// positioned says where the decode error err is in the manifest: the
// line of an unknown field, or of a field of the wrong type.
func positioned(root *yaml.Node, err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		if line := lineOf(root, strings.Split(te.Field, ".")); line > 0 {
			return fmt.Sprintf("%d: %s: %s where %s is wanted", line, te.Field, te.Value, te.Type)
		}
		return fmt.Sprintf(" %s: %s where %s is wanted", te.Field, te.Value, te.Type)
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		key := strings.Trim(name, `"`)
		if line := lineOfKey(root, key); line > 0 {
			return fmt.Sprintf("%d: unknown field %q (not a field of a Pod here)", line, key)
		}
		return fmt.Sprintf(" unknown field %q", key)
	}
	return " " + msg
}

// lineOf is the line of the field at path (JSON names; a sequence is
// searched in each item), 0 when not found.
func lineOf(n *yaml.Node, p []string) int {
	for n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if len(p) == 0 {
		return n.Line
	}
	switch n.Kind {
	case yaml.SequenceNode:
		for _, item := range n.Content {
			if l := lineOf(item, p); l > 0 {
				return l
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == p[0] {
				if len(p) == 1 {
					return n.Content[i].Line
				}
				return lineOf(n.Content[i+1], p[1:])
			}
		}
	}
	return 0
}

// lineOfKey is the line of the first mapping key named key, anywhere.
func lineOfKey(n *yaml.Node, key string) int {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return n.Content[i].Line
			}
		}
	}
	for _, c := range n.Content {
		if l := lineOfKey(c, key); l > 0 {
			return l
		}
	}
	return 0
}

// duplicateKey is the first key given twice in one mapping, and the line
// of its second occurrence (0: none).
func duplicateKey(n *yaml.Node) (string, int) {
	if n.Kind == yaml.MappingNode {
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if seen[k.Value] {
				return k.Value, k.Line
			}
			seen[k.Value] = true
		}
	}
	for _, c := range n.Content {
		if k, l := duplicateKey(c); l > 0 {
			return k, l
		}
	}
	return "", 0
}
