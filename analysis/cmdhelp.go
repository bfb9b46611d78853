package analysis

// EstimateHelp is `joulebench estimate`'s description of the estimate (its long help).
const EstimateHelp = `estimate evaluates an archived benchmark-1.5 run and prints the
methodology's lifecycle estimate for a service that handles N requests after
one startup:

  E(N) = E_startup + N·e_ss + E_release

  e_ss = E_ss / R_ss

with E_ss the GPU energy of the steady-state window (steady_window_energy_j)
and R_ss the requests whose tokens fall in that window, each counted by the
share of its output tokens generated there (steady_window_requests), so that
e_ss = steady-state J/token × the window's mean output tokens per request.
It prints the fixed overhead per request (E_startup + E_release)/N and the
smallest N at which that overhead falls under 10 % and 1 % of the energy
per request E(N)/N. The estimate applies only when load and configuration
match the measured run and excludes idle gaps between requests; measured
values take precedence.`

// AnalyzeHelp is `joulebench analyze`'s description of a re-evaluation (its long help).
const AnalyzeHelp = `analyze reads a run archive (run.json, power.csv, requests.jsonl, ...)
and evaluates a profile's derived values, metrics and checks over it. By
default it uses the profile archived with the run; --profile names a
built-in profile or a YAML file, so an edited method can be applied to old
runs without re-running anything.

Parameters: the values the run was archived with (run.json parameters)
stand, with its own profile and with --profile alike, so a re-analysis
changes the method, not the run's settings (a quick run's release hold
stays 5 s); a parameter new in the profile takes the profile's default; a
parameter of run.json the profile does not declare is left out; --set
overrides all of them. With --profile, the output ends with a line
saying how many values came from run.json, which took the profile's
default, which came from --set and which were left out.`

// ValidateHelp is `joulebench validate`'s description of the checks (its long help).
const ValidateHelp = `validate checks a profile the way run and analyze do before they start:
strict YAML (unknown keys, wrong types), known step kinds and their
parameters, and every expression compiled against the typed environment
(unknown names, type errors, dependency cycles). All problems are printed
as file:line:col: where: what. A campaign file (sweep) is checked too: its
schema, exclusions, and the profile with each run's --set values.`
