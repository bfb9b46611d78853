//go:build !unix

package boundedfile

const openFlags = 0
