//go:build !kubernetes

package all

import (
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/kubeflags"
)

// kubernetes is the kind without the client: its flags listed, its use
// refused with how to get joulebench-kube.
func kubernetes() engines.Descriptor { return kubeflags.Unavailable() }
