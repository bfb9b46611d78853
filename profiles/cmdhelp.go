package profiles

// ListHelp is `joulebench profiles list`'s description of the listing (its long help).
const ListHelp = `list shows every profile run, analyze and validate find by name: the
built-ins, the user's profiles in $XDG_CONFIG_HOME/joulebench/profiles and
those in --profile-path directories. A user profile named like a built-in
or like a profile of an earlier directory is listed with the conflict and
cannot be used by name.`
