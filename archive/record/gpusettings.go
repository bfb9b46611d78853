package record

// The GPU settings a run can apply (a power limit, locked SM clocks,
// locked memory clocks) are one table, GPUSettingsTable: each entry names
// the setting everywhere it appears (its flag, profile parameter,
// campaign axis, run.json fields, journal field, the words of its
// messages). The code that parses, checks, applies, records, restores and
// compares settings loops over the table; a new setting is an entry here
// (with its fields in the structs below) plus its device code (the
// controllers of telemetry/nvml and telemetry/sim).

// GPUSettingKind is how a setting is applied and undone.
type GPUSettingKind int

const (
	// GPULimit is a value per GPU in the setting's unit (one for every
	// GPU, or INDEX=V,...), set, read back, and the previous value put
	// back after the run: the power limit.
	GPULimit GPUSettingKind = iota
	// GPULock is a MIN,MAX range locked on every GPU and unlocked after
	// the run: locked clocks.
	GPULock
)

// GPUSetting is one entry of GPUSettingsTable.
type GPUSetting struct {
	// Key names the setting in code (a controller's lock, the journal's
	// reset_<Key>): "power_limit", "clocks", "mem_clocks".
	Key string
	// Name is what messages call it ("SM clocks"); Short what they call
	// an asked value of it ("clocks 900,1200 MHz are outside ...").
	Name, Short string
	// Unit is its values' unit ("W", "MHz").
	Unit string
	// Flag is the run flag without dashes ("gpu-clocks"), Usage its help.
	Flag, Usage string
	// Param is the profile parameter, the --set key and the campaign
	// matrix axis that carry it ("gpu_clocks").
	Param string
	// Field is its run.json field under gpu_settings ("clocks_mhz"), the
	// configuration field compare groups runs by.
	Field string
	Kind  GPUSettingKind
	// ReadBackNote is recorded when the driver cannot read a locked
	// range back (a GPULock setting with a read-back field).
	ReadBackNote string
	// RangeAlways records the device's supported range whether or not
	// the setting was asked (else only when asked).
	RangeAlways bool
	// Value, Axis, Reset, Asked and Device are the setting's field in
	// each struct below.
	Value  func(*GPUSettingValues) *string
	Axis   func(*GPUSettingAxes) *[]string
	Reset  func(*GPUSettingResets) *bool // nil: a GPULimit setting
	Asked  func(*GPUSettings) *string
	Device func(*GPUSettingsDevice) GPUSettingFields // nil: a GPULimit setting
}

// GPUSettingFields are a GPULock setting's fields of one device in
// run.json: the range asked, read back and a note (nil: none), and the
// device's supported range.
type GPUSettingFields struct {
	Asked, ReadBack, Note *string
	Min, Max              *uint32
}

// GPUSettingsTable is every GPU setting, in the order they are applied,
// recorded and shown.
func GPUSettingsTable() []GPUSetting {
	return []GPUSetting{{
		Key: "power_limit", Name: "power limit", Short: "power limit", Unit: "W", Kind: GPULimit,
		Flag:  "gpu-power-limit",
		Usage: "GPU power limit for the run, restored after it: W for every GPU (250) or INDEX=W per GPU (0=250,1=300); the same as --set gpu_power_limit_w=...",
		Param: "gpu_power_limit_w", Field: "power_limit_w",
		Value: func(v *GPUSettingValues) *string { return &v.PowerLimit },
		Axis:  func(a *GPUSettingAxes) *[]string { return &a.GPUPowerLimitW },
		Asked: func(g *GPUSettings) *string { return &g.PowerLimitW },
	}, {
		Key: "clocks", Name: "SM clocks", Short: "clocks", Unit: "MHz", Kind: GPULock,
		Flag:  "gpu-clocks",
		Usage: "lock the GPUs' SM clocks for the run, unlocked after it: MIN,MAX in MHz (1200,1500); the same as --set gpu_clocks=...",
		Param: "gpu_clocks", Field: "clocks_mhz", RangeAlways: true,
		ReadBackNote: "the driver cannot report locked clocks: not read back (the formal stage's mean SM clock shows their effect)",
		Value:        func(v *GPUSettingValues) *string { return &v.Clocks },
		Axis:         func(a *GPUSettingAxes) *[]string { return &a.GPUClocks },
		Reset:        func(r *GPUSettingResets) *bool { return &r.ResetClocks },
		Asked:        func(g *GPUSettings) *string { return &g.ClocksMHz },
		Device: func(d *GPUSettingsDevice) GPUSettingFields {
			return GPUSettingFields{Asked: &d.ClocksAskedMHz, ReadBack: &d.ClocksReadBackMHz, Note: &d.ClocksNote, Min: &d.ClockMinMHz, Max: &d.ClockMaxMHz}
		},
	}, {
		Key: "mem_clocks", Name: "memory clocks", Short: "memory clocks", Unit: "MHz", Kind: GPULock,
		Flag:  "gpu-mem-clocks",
		Usage: "lock the GPUs' memory clocks for the run where they support it, unlocked after it: MIN,MAX in MHz; the same as --set gpu_mem_clocks=...",
		Param: "gpu_mem_clocks", Field: "mem_clocks_mhz",
		Value: func(v *GPUSettingValues) *string { return &v.MemClocks },
		Axis:  func(a *GPUSettingAxes) *[]string { return &a.GPUMemClocks },
		Reset: func(r *GPUSettingResets) *bool { return &r.ResetMemClocks },
		Asked: func(g *GPUSettings) *string { return &g.MemClocksMHz },
		Device: func(d *GPUSettingsDevice) GPUSettingFields {
			return GPUSettingFields{Asked: &d.MemClocksAskedMHz, Min: &d.MemClockMinMHz, Max: &d.MemClockMaxMHz}
		},
	}}
}

// GPUSettingValues are the settings as given, one string each (a flag's
// value, "" when not given): a run's flags and spec file (the JSON keys),
// its options.
type GPUSettingValues struct {
	PowerLimit string `json:"gpu_power_limit"`
	Clocks     string `json:"gpu_clocks"`
	MemClocks  string `json:"gpu_mem_clocks"`
}

// GPUSettingAxes are a campaign matrix's axes of the settings (each value
// a flag's value): the set axes of their Params.
type GPUSettingAxes struct {
	GPUPowerLimitW []string `yaml:"gpu_power_limit_w"`
	GPUClocks      []string `yaml:"gpu_clocks"`
	GPUMemClocks   []string `yaml:"gpu_mem_clocks"`
}

// GPUSettingResets are a restore journal's locks to undo on one GPU: each
// GPULock setting locked and to be unlocked.
type GPUSettingResets struct {
	ResetClocks    bool `json:"reset_clocks,omitempty"`
	ResetMemClocks bool `json:"reset_mem_clocks,omitempty"`
}

// GPUSettings records what a run asked of the GPUs and what they took:
// per device the value asked, read back, the default and the range; and,
// once the run completed, whether the setting bound in its formal stage.
type GPUSettings struct {
	// PowerLimitW is --gpu-power-limit as asked ("250", "0=250,1=300");
	// ClocksMHz is --gpu-clocks ("MIN,MAX"). Both are configuration: runs
	// that differ in them are different configurations.
	PowerLimitW string `json:"power_limit_w,omitempty"`
	ClocksMHz   string `json:"clocks_mhz,omitempty"`
	// MemClocksMHz is --gpu-mem-clocks ("MIN,MAX"), where supported.
	MemClocksMHz string `json:"mem_clocks_mhz,omitempty"`
	// Controller is what applied them ("nvml", "sim").
	Controller string              `json:"controller"`
	Devices    []GPUSettingsDevice `json:"devices"`
	// Notes are warnings about reading the settings' effect (a power
	// source that cannot see the GPUs, a cap that never bound).
	Notes []string `json:"notes,omitempty"`
	// Restore is whether the previous values were put back when the run
	// ended (RestoreDone, RestoreFailed; absent: the run ended before
	// restoring, e.g. killed outright). RestoreError says what failed.
	Restore      string `json:"restore,omitempty"`
	RestoreError string `json:"restore_error,omitempty"`
}

// GPUSettings.Restore's values.
const (
	RestoreDone   = "restored"
	RestoreFailed = "failed"
)

// GPUSettingsDevice is one GPU under a setting.
type GPUSettingsDevice struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid,omitempty"`
	// The power limit: asked, read back after setting it, in force before
	// the run (restored after it), the device's default and its range.
	PowerLimitAskedW    float64 `json:"power_limit_asked_w,omitempty"`
	PowerLimitReadBackW float64 `json:"power_limit_read_back_w,omitempty"`
	PowerLimitPreviousW float64 `json:"power_limit_previous_w"`
	PowerLimitDefaultW  float64 `json:"power_limit_default_w"`
	PowerLimitMinW      float64 `json:"power_limit_min_w"`
	PowerLimitMaxW      float64 `json:"power_limit_max_w"`
	// Locked SM clocks: asked, read back ("" when the device cannot
	// report them: ClocksNote says so), and the supported range.
	ClocksAskedMHz    string `json:"clocks_asked_mhz,omitempty"`
	ClocksReadBackMHz string `json:"clocks_read_back_mhz,omitempty"`
	ClocksNote        string `json:"clocks_note,omitempty"`
	ClockMinMHz       uint32 `json:"clock_min_mhz,omitempty"`
	ClockMaxMHz       uint32 `json:"clock_max_mhz,omitempty"`
	// Locked memory clocks: asked (never readable back) and the
	// supported range.
	MemClocksAskedMHz string `json:"mem_clocks_asked_mhz,omitempty"`
	MemClockMinMHz    uint32 `json:"mem_clock_min_mhz,omitempty"`
	MemClockMaxMHz    uint32 `json:"mem_clock_max_mhz,omitempty"`
	// Formal is whether the setting bound in the formal stage (absent
	// when the run did not complete it).
	Formal *GPUSettingsBound `json:"formal,omitempty"`
}

// GPUSettingsBound is what the clock did in the formal stage.
type GPUSettingsBound struct {
	// Samples is how many clock readings the formal stage had;
	// ReasonsUnread how many of them could not read the clock-event
	// reasons (the driver would not say).
	Samples       int `json:"samples"`
	ReasonsUnread int `json:"reasons_unread,omitempty"`
	// PowerCapShare is the share (0..1) of the readings whose reasons
	// were read that had the software power cap clock-event reason
	// active (nil: no reading's reasons were read). CapBound is whether
	// the cap bound: true when a reading had it, false when every
	// reading's reasons were read and none had it, nil (unknown)
	// otherwise: an unread reason is never taken for "not bound".
	PowerCapShare *float64 `json:"power_cap_share,omitempty"`
	CapBound      *bool    `json:"cap_bound,omitempty"`
	// MeanSMClockMHz is the mean SM clock over the readings.
	MeanSMClockMHz float64 `json:"mean_sm_clock_mhz"`
	// OtherReasons are the other clock-event reasons seen, with the share
	// of readings that had each.
	OtherReasons map[string]float64 `json:"other_reasons,omitempty"`
}
