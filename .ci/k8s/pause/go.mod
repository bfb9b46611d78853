module joulebench.ci/pause

go 1.24
