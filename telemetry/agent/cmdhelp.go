package agent

// Help is `joulebench agent`'s description of the agent (its long help).
const Help = `agent opens this node's power source (--telemetry, as run takes it: NVML,
DCGM, RAPL, ...) and serves its samples over HTTP to a run on another node
(joulebench run --telemetry agent --agent http://THIS-NODE:PORT). It carries
samples only: its clock, its devices and a stream of readings stamped with
its clock, which the run places on its own clock by measuring the offset.

--listen is required (there is no default address) and --token-file names a
file holding the per-run token (mode 600); every request must carry it as a
bearer token. Ctrl-C or SIGTERM stops the agent.

--telemetry sim serves simulated GPUs, to try an agent setup without
hardware: they follow the simulated engine whose /metrics --sim-engine-url
names (joulebench serve-sim on this node), idle without one, and model
--sim-gpu/--sim-model's hardware (the toy model's GPUs without them; give
serve-sim the same). Every sample they give is labelled simulated.`

// Example is `joulebench agent`'s example.
const Example = `  umask 077; openssl rand -hex 32 > run.token   # one token per run, shared with the run's node
  joulebench agent --listen 10.0.0.5:7070 --token-file run.token --telemetry nvml
  joulebench serve-sim --listen 127.0.0.1:8000 --sim-gpu h100-sxm &
  joulebench agent --listen 127.0.0.1:7070 --token-file run.token --telemetry sim \
    --sim-engine-url http://127.0.0.1:8000 --sim-gpu h100-sxm`
