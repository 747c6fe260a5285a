package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/engram-memory/engram/commands"
)

// BenchmarkSchedulerIdleSweep is the cost of a background sweep over
// agents with nothing due (each holds raw entries and episodes below the
// triggers): per agent it reads the settings, the sources of each
// transition and the anxiety inputs, and appends nothing. It sizes
// --process-interval: a sweep must stay far below it.
func BenchmarkSchedulerIdleSweep(b *testing.B) {
	for _, agents := range []int{10, 100} {
		b.Run(fmt.Sprintf("agents=%d", agents), func(b *testing.B) {
			s := newStack(b, stackOptions{fixedAuth: true})
			for a := range agents {
				in := make([]commands.MemoryInput, 0, 25)
				for i := range 5 {
					raw, _ := json.Marshal(map[string]any{"content": fmt.Sprintf("raw capture %d of agent %d about the deploy", i, a)})
					in = append(in, commands.MemoryInput{Type: "raw_entry", Content: raw})
				}
				for i := range 20 {
					ep, _ := json.Marshal(map[string]any{"objective": fmt.Sprintf("task %d", i), "outcome": "done", "lessons": []string{"check"}})
					in = append(in, commands.MemoryInput{Type: "episode", Content: ep})
				}
				if _, err := s.memCmds.CreateBatch(context.Background(), metaFor(alice), fmt.Sprintf("agent-%03d", a), in); err != nil {
					b.Fatal(err)
				}
			}
			sched := s.scheduler(b, 2, nil)
			if st := sched.Sweep(context.Background()); st.Agents != agents || st.Errors != 0 {
				b.Fatalf("first sweep: %+v", st)
			}
			head := s.head(b)
			for b.Loop() {
				if st := sched.Sweep(context.Background()); st.Passes != 0 || st.Errors != 0 {
					b.Fatalf("idle sweep: %+v", st)
				}
			}
			if s.head(b) != head {
				b.Fatal("an idle sweep appended")
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*agents), "µs/agent")
		})
	}
}
