package testserver

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// MemStat is a process's memory as Linux reports it in /proc/PID/status.
type MemStat struct {
	RSSBytes     int64 // VmRSS: resident set size now
	PeakRSSBytes int64 // VmHWM: the highest resident set size so far
	// AnonBytes (RssAnon) is the anonymous part of RSSBytes: the heap and
	// stacks. The rest is mostly file pages mapped in, e.g. the SQLite
	// database that the server's readers map: page cache the kernel holds
	// for the file either way.
	AnonBytes int64
}

// MemStat reads the server's resident memory.
func (p *Process) MemStat() (MemStat, error) { return ReadMemStat(p.PID()) }

// ReadMemStat reads VmRSS, VmHWM and RssAnon of pid (Linux only).
func ReadMemStat(pid int) (MemStat, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return MemStat{}, fmt.Errorf("testserver: %w", err)
	}
	defer f.Close()
	var m MemStat
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch key {
		case "VmRSS":
			m.RSSBytes, err = parseKB(val)
		case "VmHWM":
			m.PeakRSSBytes, err = parseKB(val)
		case "RssAnon":
			m.AnonBytes, err = parseKB(val)
		}
		if err != nil {
			return MemStat{}, fmt.Errorf("testserver: /proc/%d/status %s: %w", pid, key, err)
		}
	}
	if err := sc.Err(); err != nil {
		return MemStat{}, fmt.Errorf("testserver: %w", err)
	}
	if m.RSSBytes == 0 {
		return MemStat{}, fmt.Errorf("testserver: no VmRSS in /proc/%d/status", pid)
	}
	return m, nil
}

// parseKB parses "   123456 kB".
func parseKB(s string) (int64, error) {
	num, unit, _ := strings.Cut(strings.TrimSpace(s), " ")
	if unit != "kB" {
		return 0, fmt.Errorf("unexpected unit in %q", s)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	return n * 1024, err
}
