package workflow

import "github.com/joulebench/joulebench/internal/yamlstrict"

// Error is one problem in a profile, at a position: `file:line:col: where: what`.
type Error = yamlstrict.Error

// ErrorList is every problem found in a profile, in file order.
type ErrorList = yamlstrict.ErrorList
