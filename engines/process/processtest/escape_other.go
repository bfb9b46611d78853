//go:build !unix

package processtest

import (
	"errors"
	"net"
)

func escape(Fake, net.Listener) error { return errors.New("escape: unix only") }
