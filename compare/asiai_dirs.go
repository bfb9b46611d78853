package compare

import "github.com/joulebench/joulebench/archive"

// AsiaiWinnerOfDirs is the winner table (AsiaiWinner) of the archived runs
// in dirs, with their results as the runs wrote them. A directory that
// cannot be loaded (the run of an engine that failed) has no row: its
// failure is reported where it happened.
func AsiaiWinnerOfDirs(dirs []string) []AsiaiEngine {
	runs := make([]Run, 0, len(dirs))
	for _, dir := range dirs {
		run, err := archive.Load(dir)
		if err != nil {
			continue
		}
		runs = append(runs, Run{Dir: dir, Meta: run.Meta, Results: run.Results})
	}
	return AsiaiWinner(runs)
}
