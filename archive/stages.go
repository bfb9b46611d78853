package archive

import "github.com/joulebench/joulebench/archive/record"

// markOpenStages sets Open on the stages of m (decoded from data) that
// have no `end`, or a null one.
func markOpenStages(path string, data []byte, m *record.Meta) error {
	var ends struct {
		Stages []struct {
			End *float64 `json:"end"`
		} `json:"stages"`
	}
	if err := decodeDocument(path, data, &ends); err != nil {
		return err
	}
	for i := range m.Stages {
		if i < len(ends.Stages) && ends.Stages[i].End == nil {
			m.Stages[i].Open = true
		}
	}
	return nil
}
