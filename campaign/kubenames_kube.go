//go:build kubernetes

package campaign

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// k8sNames checks the kubernetes section's names, label values and
// quantities as the API server does (apimachinery's rules), in the build
// that runs Kubernetes sweeps (joulebench-kube).
var k8sNames = apimachineryNames{}

// apimachineryNames are apimachinery's checks.
type apimachineryNames struct{}

func (apimachineryNames) dns1123Label(s string) []string     { return validation.IsDNS1123Label(s) }
func (apimachineryNames) dns1123Subdomain(s string) []string { return validation.IsDNS1123Subdomain(s) }
func (apimachineryNames) qualifiedName(s string) []string    { return validation.IsQualifiedName(s) }
func (apimachineryNames) labelValue(s string) []string       { return validation.IsValidLabelValue(s) }
func (apimachineryNames) quantity(s string) error {
	_, err := resource.ParseQuantity(s)
	return err
}
