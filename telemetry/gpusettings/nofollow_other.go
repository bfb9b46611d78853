//go:build !unix

package gpusettings

// noFollow: no such flag here; O_EXCL already refuses an existing link.
const noFollow = 0
