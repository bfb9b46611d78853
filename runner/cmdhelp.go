package runner

// RunHelp is `joulebench run`'s description of a run (its long help).
const RunHelp = `run executes a profile's steps (preflight, monitor, baseline, start and verify
the engine, warm-up, formal requests, release, archive), writes the raw data
to a new run directory as it arrives, then evaluates the profile and prints
the results. With no engine flag it uses the built-in simulator (engine and
GPU), which every output labels SIMULATED.`
