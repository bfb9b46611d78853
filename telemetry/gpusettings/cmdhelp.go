package gpusettings

import (
	"strings"

	"github.com/joulebench/joulebench/archive/record"
)

// RestoreHelp is `joulebench restore`'s description of Restore (its long
// help), naming the flags of every setting of record.GPUSettingsTable.
func RestoreHelp() string {
	var flags []string
	for _, s := range record.GPUSettingsTable() {
		flags = append(flags, "--"+s.Flag)
	}
	last := len(flags) - 1
	return `restore reads the journals that a run with ` + strings.Join(flags[:last], ", ") + ` or
` + flags[last] + ` writes before changing anything, one per GPU
(/var/lib/joulebench/gpu-settings-<GPU UUID>.json; $JOULEBENCH_STATE_DIR when
set; $XDG_STATE_HOME/joulebench when /var/lib/joulebench cannot be written),
and puts every GPU's previous power limit back and unlocks its clocks. A run
killed outright (SIGKILL, a power loss) leaves its journals; no run starts
while one is there. A GPU no longer present is reported and kept in its
journal. See docs/power.md, "GPU settings: the restore journal".`
}
