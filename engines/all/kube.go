//go:build kubernetes

package all

import (
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/kube"
)

// kubernetes is the engine deployed as a pod (client-go linked in).
func kubernetes() engines.Descriptor { return kube.Descriptor() }
