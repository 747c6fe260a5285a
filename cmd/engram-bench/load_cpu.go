package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/engram-memory/engram/internal/testserver"
)

// cpuMeter reads the CPU time of the server (when this program started it)
// and of this program, so that a run can say what one request cost on each
// side. Driver and server share the machine: end-to-end latency under
// concurrency is roughly requests in flight divided by throughput, and
// throughput is bounded by the CPU both sides spend per request.
type cpuMeter struct {
	server *testserver.Process // nil for --server
}

// cpuSample is one reading; a negative value is unknown.
type cpuSample struct {
	server, driver time.Duration
}

func (m cpuMeter) sample() cpuSample {
	s := cpuSample{server: -1, driver: selfCPU()}
	if m.server != nil {
		if d, err := m.server.CPUTime(); err == nil {
			s.server = d
		}
	}
	return s
}

// cpuUse is the CPU spent between two samples, per request.
type cpuUse struct {
	// ServerMSPerRequest and DriverMSPerRequest are CPU milliseconds
	// (user + system, all threads) per measured request; the server's is
	// absent for --server. /proc counts in 10 ms ticks, so they are exact
	// to 10 ms over the whole phase.
	ServerMSPerRequest *float64 `json:"server_cpu_ms_per_request,omitempty"`
	DriverMSPerRequest *float64 `json:"driver_cpu_ms_per_request,omitempty"`
	// ServerCores and DriverCores are the average number of cores busy.
	ServerCores *float64 `json:"server_cpu_cores,omitempty"`
	DriverCores *float64 `json:"driver_cpu_cores,omitempty"`
}

func cpuBetween(from, to cpuSample, requests int, elapsed time.Duration) cpuUse {
	var u cpuUse
	per := func(d time.Duration) (*float64, *float64) {
		ms := float64(d.Microseconds()) / 1000 / float64(max(requests, 1))
		cores := d.Seconds() / elapsed.Seconds()
		return &ms, &cores
	}
	if from.server >= 0 && to.server >= 0 {
		u.ServerMSPerRequest, u.ServerCores = per(to.server - from.server)
	}
	if from.driver >= 0 && to.driver >= 0 {
		u.DriverMSPerRequest, u.DriverCores = per(to.driver - from.driver)
	}
	return u
}

// selfCPU is this process's user + system CPU time; -1 if unknown.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// settle waits until a server this program started has gone quiet after
// the fill: the vector index builds its graph in the background, and
// searches measured while it still runs would measure the build too (and
// the exact scan of the part not yet in the graph). Quiet means under
// 5% of one core over two seconds in a row. It returns how long it waited.
func settle(ctx context.Context, p *testserver.Process, timeout time.Duration, log io.Writer) (time.Duration, error) {
	if p == nil || timeout <= 0 {
		return 0, nil
	}
	const window, quiet = time.Second, 50 * time.Millisecond
	start, quietWindows := time.Now(), 0
	prev, err := p.CPUTime()
	if err != nil {
		return 0, nil // not Linux: nothing to wait for
	}
	for {
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-time.After(window):
		}
		cur, err := p.CPUTime()
		if err != nil {
			return time.Since(start), err
		}
		// Two quiet windows in a row: a graph build holds off for a second
		// after the last write (vectorindex's writeQuiet) before it starts.
		if cur-prev < quiet {
			quietWindows++
			if quietWindows == 2 {
				return time.Since(start), nil
			}
		} else {
			quietWindows = 0
		}
		prev = cur
		if waited := time.Since(start); waited > timeout {
			fmt.Fprintf(log, "server still busy after %v (%v CPU in the last second); measuring anyway\n", waited.Round(time.Second), cur-prev)
			return waited, nil
		}
	}
}

// loadAverage is /proc/loadavg's first three fields ("" if unknown): the
// machine is shared, and a busy one makes every number worse.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
