package yamlstrict

import (
	"strconv"

	"go.yaml.in/yaml/v3"
)

// NodeAt follows mapping keys and list indexes ("0", "1", ...) from n; nil
// when a step is missing. Errors about a decoded value use it to find the
// value's position.
func NodeAt(n *yaml.Node, path ...string) *yaml.Node {
	for _, key := range path {
		if n == nil {
			return nil
		}
		switch n.Kind {
		case yaml.MappingNode:
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == key {
					next = n.Content[i+1]
					break
				}
			}
			n = next
		case yaml.SequenceNode:
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(n.Content) {
				return nil
			}
			n = n.Content[i]
		default:
			return nil
		}
	}
	return n
}

// FirstNode is the first of ns that is not nil (nil when all are).
func FirstNode(ns ...*yaml.Node) *yaml.Node {
	for _, n := range ns {
		if n != nil {
			return n
		}
	}
	return nil
}
