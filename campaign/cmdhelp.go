package campaign

// SweepHelp is `joulebench sweep`'s description of a sweep (its long help).
const SweepHelp = `sweep expands a campaign file (a profile, a matrix of engines, models,
scenarios, loads, profile parameters and repetitions, with exclusions) into
runs with stable ids, runs each as an ordinary 'joulebench run' (its own
archive under OUT/runs/<id>, cold start), prints progress and ends with the
compare of the campaign's archives. It resumes: a complete configuration is
skipped, an interrupted one run again into a new directory (<id>.try2), a
failed one only with --retry-failed. --executor slurm submits one sbatch
job per run (re-attaching after a restart, scancel on Ctrl-C);
--executor kubernetes makes one Job per run (--image, --kubeconfig, the
campaign's kubernetes section; archives copied back from the pods,
docs/kubernetes.md); --dry-run
prints the plan and runs nothing. A campaign with a search section searches
the load of each combination (kind: sweep or slo), resumable from
OUT/search-state.json, and ends with the frontier drawn in
OUT/frontier.svg. docs/campaigns.md has the details.`
