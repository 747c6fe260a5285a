// Package loopback decides what counts as this machine for the listeners
// that must never be reached from elsewhere (the dashboard, pprof) and for
// the warning when the API listens beyond it.
package loopback

import (
	"net"
	"strings"
)

// Addr reports whether a listen address HOST:PORT binds only loopback:
// a loopback IP (127.0.0.0/8, ::1) or "localhost".
func Addr(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Host reports whether a request's Host header names this machine by a
// loopback name: 127.0.0.1, localhost or [::1], with or without a port.
// Any other name is refused by loopback-only listeners, even though the
// connection arrived on loopback: a page from another site whose name the
// attacker re-points at 127.0.0.1 (DNS rebinding) makes the browser send
// that site's name, so checking the Host header is what keeps such pages
// from reading the listener's answers.
func Host(host string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		name = host[1 : len(host)-1]
	}
	switch strings.ToLower(name) {
	case "127.0.0.1", "localhost", "::1":
		return true
	}
	return false
}
