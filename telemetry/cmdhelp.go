package telemetry

// DevicesHelp is `joulebench devices`'s description of the device listing (its long help).
const DevicesHelp = `devices opens the power source that --telemetry chooses (auto: NVML when an
NVIDIA GPU is there, powermetrics on macOS, the endpoints of --dcgm-url) and
lists its devices: name, UUID, whether energy comes from the device's
cumulative counter or is integrated from power samples, which power field is
read, and whether memory use is known. With no source it says why.

With --sim it lists the simulator's hardware presets instead (--sim-gpu,
--sim-model): each GPU's and model's constants, their sources, and what a
steady load gives on the model.`
