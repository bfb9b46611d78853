package steps

import (
	"github.com/joulebench/joulebench/workflow"
)

// ArchiveConfig is the `with:` of the archive step (spec step 7).
type ArchiveConfig struct{}

var archiveKind = workflow.StepKind{
	Name:      "archive",
	Doc:       "stop sampling, evaluate the profile over the raw data, write results.json and mark runs that fail an exclude check as excluded (never deleted)",
	NewConfig: func() any { return &ArchiveConfig{} },
}
