//go:build !unix

package boundedfile

const openFlags = 0

// noFollowFlag: no such flag here; ReadNoFollow's lstat refuses a link.
const noFollowFlag = 0
