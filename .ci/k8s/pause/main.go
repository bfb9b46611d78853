// Command pause is the CI cluster's sandbox ("pause") container: it holds a
// pod's namespaces open and exits on SIGTERM or SIGINT. Static, no libc.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
