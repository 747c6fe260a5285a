package testserver

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTick is the unit of the CPU times in /proc/PID/stat: USER_HZ, which
// is 100 on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// CPUTime reads the CPU time (user + system) the server has used so far.
func (p *Process) CPUTime() (time.Duration, error) { return ReadCPUTime(p.PID()) }

// ReadCPUTime reads the user and system CPU time of pid from
// /proc/PID/stat (Linux only), with a resolution of 10 ms.
func ReadCPUTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("testserver: %w", err)
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// the fields after the last ')' start with field 3, state.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("testserver: /proc/%d/stat: no command name", pid)
	}
	fields := bytes.Fields(data[i+1:])
	// utime and stime are fields 14 and 15, i.e. 11 and 12 after state.
	if len(fields) < 13 {
		return 0, fmt.Errorf("testserver: /proc/%d/stat: %d fields", pid, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("testserver: /proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}
