//go:build !kubernetes

package campaign

// k8sNames, in the default build, leaves the kubernetes section's names,
// label values and quantities unchecked: apimachinery (the API server's
// rules) stays out of the default binary, and every Kubernetes sweep runs
// in joulebench-kube (the kubernetes build), which checks them with
// positions when it loads the campaign, before a Job is made. The default
// build refuses the Kubernetes executor itself. What is not Kubernetes'
// own (operators, effects, durations, GPUs, the values a manifest may
// carry: CheckValue) is checked in both builds.
var k8sNames = uncheckedNames{}

// uncheckedNames accepts every name and quantity.
type uncheckedNames struct{}

func (uncheckedNames) dns1123Label(string) []string     { return nil }
func (uncheckedNames) dns1123Subdomain(string) []string { return nil }
func (uncheckedNames) qualifiedName(string) []string    { return nil }
func (uncheckedNames) labelValue(string) []string       { return nil }
func (uncheckedNames) quantity(string) error            { return nil }
