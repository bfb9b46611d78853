package gpusettings

// fake is a Controller of GPUs in memory for the package's tests.
type fake struct {
	Controller
}

func (*fake) Name() string   { return "nvml" }
func (*fake) Volatile() bool { return false }
