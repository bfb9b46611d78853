package sim

// ServeHelp is `joulebench serve-sim`'s description of Serve (its long help).
const ServeHelp = `serve-sim serves the built-in simulated engine (its OpenAI API, /health,
/version and /metrics, with the activity its simulated GPUs follow) at
--listen until SIGTERM or Ctrl-C, then stops it as a run stops the
simulator. It is the engine process of a pod that 'joulebench run --engine
kubernetes' deploys (docs/kubernetes.md). Everything it serves is
labelled simulated.`
