package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/internal/testserver"
)

// TestSchemathesis fuzzes the binary from its own OpenAPI document
// (GET /v1/openapi.json) with schemathesis, in two passes at once over
// data seeded through the API by one user (seedFuzzData): the owner pass,
// as that user, puts the seeded ids into the valid requests so the routes' success
// paths are reached; the cross-tenant pass sends the same ids as another
// user, and its check (test/fuzz/engram_hooks.py) fails any answer that
// lets that user read or change the first user's objects. Every response
// must be one the document describes and never a 500, and every operation
// must accept some request valid by the document in each phase (else the
// document is looser than the server: a schema validation mismatch).
//
// The owner pass also runs the stateful phase, which follows the
// document's links from a create to the routes that use what it created;
// its hooks read each created resource again with the other user's key,
// which must answer 404. The import route is fuzzed with JSON Lines drawn
// from the seeded agent's exports and malformed lines, and a refused
// import must leave its agent as it was.
//
// The budget is ENGRAM_TEST_FUZZ_API_EXAMPLES examples per operation and
// pass (scenarios, in the stateful phase) in the phases
// ENGRAM_TEST_FUZZ_API_PHASES (ENGRAM_TEST_*, which TestMain's hermetic
// environment keeps); the default, 3 examples in the examples, fuzzing and
// stateful phases, is the short run of make test and CI (the fuzzing
// phase, which the budget scales, is nine tenths of a pass), and make
// fuzz-api adds the coverage phase (to the owner pass) and raises the
// budget. The seed is fixed and each pass has one worker, so a run is
// repeatable. schemathesis is installed by .ci/run at a pinned version
// (test/fuzz/requirements.txt); a missing one fails the test.
func TestSchemathesis(t *testing.T) {
	t.Parallel()
	examples := 3
	if v := os.Getenv("ENGRAM_TEST_FUZZ_API_EXAMPLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("ENGRAM_TEST_FUZZ_API_EXAMPLES=%q: want a positive integer", v)
		}
		examples = n
	}
	phases := "examples,fuzzing,stateful"
	if v := os.Getenv("ENGRAM_TEST_FUZZ_API_PHASES"); v != "" {
		phases = v
	}
	// ENGRAM_TEST_FUZZ_API_PATHS, a regular expression, limits the run to
	// the paths it matches: a fix is checked on its operations alone.
	only := os.Getenv("ENGRAM_TEST_FUZZ_API_PATHS")
	hooks, err := filepath.Abs("../../test/fuzz")
	if err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	// Private addresses are allowed so the seeded webhooks can point at a
	// closed loopback port. The re-embedding runner pauses an hour after
	// its first step, so the seeded jobs stay queued or running for the
	// cancel route to succeed on (seedFuzzData). The passes share the
	// loopback address, so the per-address limit of the accounts routes is
	// off, and so is the per-credential one, which schemathesis 4.32's
	// coverage phase outruns: their 429s would say nothing of the requests'
	// shapes (TestRateLimits tests them).
	//
	// ENGRAM_TEST_FUZZ_API_LOGS, a directory, keeps what traces a failure
	// of a long run there: the server's whole log, each pass's exchanges,
	// whole (its hooks' trace), and schemathesis's output.
	traceDir := os.Getenv("ENGRAM_TEST_FUZZ_API_LOGS")
	serverLog := io.Discard
	if traceDir != "" {
		serverLog = createTraceFile(t, traceDir, "server.log")
	}
	p := testserver.Start(t, testserver.Options{
		Binary: binPath, DataDir: dataDir, LogTo: serverLog,
		Args: []string{"--webhook-allow-private", "--job-batch-delay", "1h", "--ip-rate-limit", "0", "--rate-limit", "0"},
	})
	owner := testserver.Register(t, p.BaseURL, dataDir, "fuzz@example.com")
	other := testserver.Register(t, p.BaseURL, dataDir, "fuzz-other@example.com")
	data := seedFuzzData(t, p.APIURL(), owner)
	data["exports"] = exports(t, p.APIURL(), owner, data["agent"].(string))
	data["verify_tokens"] = verificationTokens(t, p, examples)
	seed, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	seedFile := filepath.Join(t.TempDir(), "seed.json")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}

	// The passes share the test's deadline: make fuzz-api's budget (the
	// coverage phase, 50 examples) takes far longer than the short run.
	ctx := context.Background()
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-time.Minute))
		t.Cleanup(cancel)
	}
	// The passes run at once, each with one worker (so each is
	// repeatable): the cross-tenant pass changes nothing of the owner's
	// (its check fails any answer that would), and the owner's changes
	// leave the other user's answers 404 whatever they are.
	passes := []struct{ name, key string }{{"owner", owner}, {"cross_tenant", other}}
	const shared = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance,ignored_auth,missing_required_header,unsupported_method,negative_data_rejection,allow_header_conformance"
	// A valid request of the cross-tenant pass names the owner's objects:
	// its right answers are refusals, some of them 400s (memories derived
	// from another user's), which positive_data_acceptance would fail. Its
	// own check (engram_hooks.py) judges those answers instead.
	checks := map[string]string{"owner": shared + ",positive_data_acceptance", "cross_tenant": shared}
	outs, errs, logs := make([][]byte, len(passes)), make([]error, len(passes)), make([]string, len(passes))
	var wg sync.WaitGroup
	for i, pass := range passes {
		passPhases := phases
		if pass.name == "cross_tenant" {
			// The coverage phase walks each field's boundary and invalid
			// values: shapes, which the owner pass judges. The other user's
			// requests all name the same seeded ids, and which ids they
			// name is what this pass judges: it runs the other phases only.
			// The stateful phase chains a user's own creates and uses,
			// which the owner pass runs and reads again as this user.
			passPhases = withoutPhase(withoutPhase(phases, "coverage"), "stateful")
		}
		if passPhases == "" {
			continue // ENGRAM_TEST_FUZZ_API_PHASES has none of this pass's phases
		}
		args := []string{"--config-file", filepath.Join(hooks, "schemathesis.toml"), "run", p.APIURL() + "/openapi.json",
			"--url", p.BaseURL,
			"--header", "Authorization: Bearer " + pass.key,
			// The checks that hold for a correct server; docs/api.md says
			// The checks that hold for a correct server; docs/api.md says
			// why the stateful ones are off, and why the cross-tenant pass
			// leaves positive_data_acceptance to its own check. The list turns
			// off every check it does not name, the hooks' too, so it names those.
			"--checks", checks[pass.name] + "," + strings.Join(hookChecks(), ","),
			"--max-examples", strconv.Itoa(examples),
			"--phases", passPhases,
			"--seed", "20261129",
			"--workers", "1",
			"--exclude-path", "/mcp",
			"--no-color",
			// Generation slows with the machine's load (CI shares it), not
			// with the document: a slow example is no finding.
			"--suppress-health-check", "too_slow",
		}
		if only != "" {
			args = append(args, "--include-path-regex", only)
		}
		cmd := exec.CommandContext(ctx, "schemathesis", args...)
		cmd.Dir = t.TempDir()
		logs[i] = filepath.Join(cmd.Dir, "exchanges.log")
		cmd.Env = append(os.Environ(),
			"SCHEMATHESIS_HOOKS=engram_hooks",
			"PYTHONPATH="+hooks,
			"ENGRAM_FUZZ_SEED="+seedFile,
			"ENGRAM_FUZZ_PASS="+pass.name,
			"ENGRAM_FUZZ_KEY="+pass.key,
			"ENGRAM_FUZZ_LOG="+logs[i],
			"ENGRAM_FUZZ_BASE_URL="+p.BaseURL,
		)
		if pass.name == "owner" {
			cmd.Env = append(cmd.Env, "ENGRAM_FUZZ_OTHER_KEY="+other)
		}
		if traceDir != "" {
			cmd.Env = append(cmd.Env, "ENGRAM_FUZZ_TRACE="+filepath.Join(traceDir, pass.name+"-exchanges.jsonl"))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	// The seeded memories are what the passes' requests name: a request
	// that removed one (the coverage phase's negative DELETE of a seeded
	// raw entry, issue 25) fails the creates that derive from it later,
	// far from its cause. Every one must still be there.
	for _, id := range data["memories"].([]string) {
		if _, err := call(t, "GET", p.APIURL()+"/memories/"+id, owner, nil, nil); err != nil {
			t.Errorf("a seeded memory is gone after the passes (ENGRAM_TEST_FUZZ_API_LOGS traces the request that removed it): %v", err)
		}
	}
	for i, pass := range passes {
		if logs[i] == "" {
			continue
		}
		if traceDir != "" {
			if _, err := createTraceFile(t, traceDir, pass.name+"-output.txt").Write(outs[i]); err != nil {
				t.Error(err)
			}
		}
		if errs[i] != nil {
			t.Errorf("schemathesis, %s pass: %v (install it as .ci/run does)\n%s", pass.name, errs[i], outs[i])
			continue
		}
		t.Logf("%s pass:\n%s", pass.name, outs[i])
		// A request valid by the document that the server refuses for its
		// shape means the document is looser than the server, which fails
		// the test, naming every such operation (schemathesis only warns,
		// and names three). Its warning counts the 400s of invalid
		// requests beside valid ones answered 404 alone, which are the
		// cross-tenant pass's right answers: there the list decides.
		if missing := checksNotRun(t, logs[i]); len(missing) > 0 {
			t.Errorf("%s pass: the hooks' checks %v never ran (a --checks list without them turns them off)", pass.name, missing)
		}
		left := unanswered(t, logs[i])
		if left != "" || (pass.name == "owner" && bytes.Contains(outs[i], []byte("Schema validation mismatch"))) {
			t.Errorf("%s pass: operations without a success to a valid request (a schema validation mismatch):\n%s", pass.name, left)
		}
	}
	if t.Failed() {
		t.Logf("server log:\n%s", p.Log())
	}
}

// createTraceFile creates name in dir (and dir) for a trace kept after
// the test, closed when the test ends: a name already there is replaced.
func createTraceFile(t *testing.T, dir, name string) *os.File {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	})
	return f
}

// hookChecks are the checks test/fuzz/engram_hooks.py registers (its
// CHECKS): no leak to the other user, no resource the stateful phase
// created readable with the other user's key, no refused import that
// changed its agent.
func hookChecks() []string {
	return []string{"cross_tenant_isolation", "created_resources_stay_private", "refused_import_changes_nothing"}
}

// checksNotRun are the hooks' checks that a pass's exchanges log ("check
// NAME", written at a check's first call) does not say ran.
func checksNotRun(t *testing.T, log string) []string {
	t.Helper()
	raw, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	return slices.DeleteFunc(hookChecks(), func(check string) bool { return slices.Contains(lines, "check "+check) })
}

// schemathesisPhases are the phases of a schemathesis run, each of which
// the hooks give objects of its own where a phase uses one up.
func schemathesisPhases() []string {
	return []string{"examples", "coverage", "fuzzing", "stateful"}
}

// withoutPhase is the comma-separated phases without one of them (empty
// if that one is all).
func withoutPhase(phases, phase string) string {
	kept := slices.DeleteFunc(strings.Split(phases, ","), func(p string) bool { return p == phase })
	return strings.Join(kept, ",")
}

// verificationTokens registers addresses for each pass and phase of
// schemathesis and returns their unspent tokens, which the valid
// POST /v1/auth/verify requests of that pass and phase send in turn
// (test/fuzz/engram_hooks.py): a generated token is unknown to the server,
// and a token works once (410 token_used after), so each valid request
// needs one of its own. A phase sends at most about as many valid
// requests to an operation as its budget of examples; the coverage phase
// a few more.
func verificationTokens(t *testing.T, p *testserver.Server, examples int) map[string]map[string][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tokens := map[string]map[string][]string{}
	for _, pass := range []string{"owner", "cross_tenant"} {
		tokens[pass] = map[string][]string{}
		for _, phase := range schemathesisPhases() {
			for i := range examples + 10 {
				email := fmt.Sprintf("fuzz-verify-%s-%s-%d@example.com", pass, phase, i)
				token, err := testserver.RequestVerification(ctx, p.BaseURL, p.OutboxDir(), email)
				if err != nil {
					t.Fatal(err)
				}
				tokens[pass][phase] = append(tokens[pass][phase], token)
			}
		}
	}
	return tokens
}

// unanswered reads the exchanges the hooks logged ("METHOD PATH PHASE
// positive|negative STATUS CODE") and lists each operation and phase none
// of whose valid requests succeeded and that refused one for another
// reason than a credential or a missing object (401, 403, 404: the
// cross-tenant pass's rule), with the answers it gave them: schemathesis's
// mismatch warning (which judges each phase apart), naming every operation.
// The stateful phase is not judged so: it sends an operation the few
// requests its scenarios reach it with, in states its earlier steps left
// (a suggestion its scenario accepted, a cursor of another listing), and
// the other phases judge the document's shapes.
func unanswered(t *testing.T, log string) string {
	t.Helper()
	raw, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string]map[string]int{} // operation → "status code" → count
	succeeded, refusedForShape := map[string]bool{}, map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Fields(line)
		if len(f) != 6 || f[3] != "positive" || f[2] == "stateful" {
			continue
		}
		op := f[0] + " " + f[1] + " (" + f[2] + ")"
		switch status := f[4]; {
		case status[0] == '2':
			succeeded[op] = true
		case status != "401" && status != "403" && status != "404":
			refusedForShape[op] = true
		}
		if answers[op] == nil {
			answers[op] = map[string]int{}
		}
		answers[op][f[4]+" "+f[5]]++
	}
	var lines []string
	for op, counts := range answers {
		if !succeeded[op] && refusedForShape[op] {
			lines = append(lines, fmt.Sprintf("  %s: %v", op, counts))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// exports are the lines of an agent's export in each format, header
// first, from which the hooks draw the bodies of imports.
func exports(t *testing.T, api, key, agent string) map[string][]string {
	t.Helper()
	lines := map[string][]string{}
	for _, format := range []string{"events", "memories"} {
		req, err := http.NewRequest("GET", api+"/agents/"+agent+"/export?format="+format, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("export of %s as %s: %d %v %s", agent, format, resp.StatusCode, err, body)
		}
		lines[format] = strings.Split(strings.TrimSpace(string(body)), "\n")
		if len(lines[format]) < 2 {
			t.Fatalf("export of %s as %s has no line after its header:\n%s", agent, format, body)
		}
	}
	return lines
}

// seedFuzzData creates, as the user of key, what the fuzzer's requests
// address (test/fuzz/engram_hooks.py reads the answer): an agent with
// memories of several types whose contents carry a marker, raw entries
// processed into pending suggestions, a forgotten memory, re-embedding
// jobs still running, webhooks and keys; and, for the routes that destroy
// or change their object, an object each of their own.
func seedFuzzData(t *testing.T, api, key string) map[string]any {
	t.Helper()
	const agent, marker = "fuzz-seeded", "fuzz-seed-marker-7f3a"
	post := func(path string, body, out any) {
		t.Helper()
		if _, err := call(t, "POST", api+path, key, body, out); err != nil {
			t.Fatal(err)
		}
	}
	var created struct{ ID string }
	types := map[string]string{} // memory id → type, for the routes naming both
	memory := func(agent, typ string, content map[string]any) string {
		post("/memories", map[string]any{"agent_id": agent, "type": typ, "content": content}, &created)
		types[created.ID] = typ
		return created.ID
	}
	// Processing turns these into an episode, a belief and a note.
	var raws []string
	for _, text := range []string{
		"Yesterday we deployed the billing service and it failed, then I learned to check migrations",
		"I think caching always helps latency",
		"Reminder: the docs are at https://example.com/docs",
	} {
		raws = append(raws, memory(agent, "raw_entry", map[string]any{"content": text + " " + marker}))
	}
	memories := append(raws,
		memory(agent, "notes", map[string]any{"content": marker + " note"}),
		memory(agent, "beliefs", map[string]any{"statement": marker + " belief", "confidence": 0.6}),
		memory(agent, "episodes", map[string]any{"objective": marker + " deploy", "outcome": "fine"}),
		memory(agent, "goals", map[string]any{"title": marker + " goal", "status": "active"}),
	)
	doomedMemory := memory(agent, "notes", map[string]any{"content": marker + " doomed note"})
	forgotten := memory(agent, "notes", map[string]any{"content": marker + " forgotten note"})
	if _, err := call(t, "DELETE", api+"/memories/"+forgotten, key, nil, nil); err != nil {
		t.Fatal(err)
	}
	memory("fuzz-doomed", "notes", map[string]any{"content": marker + " doomed agent's note"})
	// The agent the stateful phase writes its memories to, with a note
	// they may derive from: a link from a memory's create may delete it.
	const statefulAgent = "fuzz-stateful"
	statefulRef := "notes:" + memory(statefulAgent, "notes", map[string]any{"content": marker + " stateful note"})
	memory("fuzz-settings", "notes", map[string]any{"content": marker + " settings agent's note"})

	post("/agents/"+agent+"/process", map[string]any{"force": true}, nil)
	var pending struct{ Suggestions []struct{ ID string } }
	if _, err := call(t, "GET", api+"/agents/"+agent+"/suggestions?status=pending", key, nil, &pending); err != nil {
		t.Fatal(err)
	}
	if len(pending.Suggestions) < 3 {
		t.Fatalf("processing left %d pending suggestions, want 3", len(pending.Suggestions))
	}
	var suggestions []string
	for _, s := range pending.Suggestions {
		suggestions = append(suggestions, s.ID)
	}

	// A re-embedding job per schemathesis phase, each of an agent of its
	// own, that the runner never finishes (the server's batch delay): the
	// valid cancel requests of a phase cancel its job, the first with a
	// success. Another agent per phase is free of jobs, for the valid
	// bulk re-embedding requests of that phase (one job per agent at a
	// time: the seeded agent would answer 409 job_in_progress after the
	// first). And an agent per phase for the valid sync pushes, with a
	// note their memories may derive from: a pushed settings change
	// (maintenance, say) then binds only the later pushes of its phase.
	runningJobs, reembedAgents, syncAgents := map[string]string{}, map[string]string{}, map[string]map[string]string{}
	for _, phase := range schemathesisPhases() {
		syncAgent := "fuzz-sync-" + phase
		syncAgents[phase] = map[string]string{"agent": syncAgent, "ref": "notes:" + memory(syncAgent, "notes", map[string]any{"content": marker + " note to derive from"})}
		var job struct {
			JobID string `json:"job_id"`
		}
		jobAgent := "fuzz-job-" + phase
		memory(jobAgent, "notes", map[string]any{"content": marker + " note of a job's agent"})
		post("/embeddings/bulk-reembed", map[string]any{"agent_id": jobAgent}, &job)
		runningJobs[phase] = job.JobID
		reembedAgents[phase] = "fuzz-reembed-" + phase
		memory(reembedAgents[phase], "notes", map[string]any{"content": marker + " note to re-embed"})
	}
	// A closed loopback port: deliveries fail at once and stay on the machine.
	webhook := func() string {
		post("/webhooks", map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"job.completed"}}, &created)
		return created.ID
	}
	newKey := func(name string) string {
		post("/auth/keys", map[string]any{"name": name}, &created)
		return created.ID
	}
	// A key per phase for the routes that revoke one (revoke, cycle): a
	// key revoked by one phase answers 409 key_already_revoked to the next.
	keysPerPhase := func(name string) map[string]string {
		keys := map[string]string{}
		for _, phase := range schemathesisPhases() {
			keys[phase] = newKey(name + "-" + phase)
		}
		return keys
	}
	var catalogue struct {
		Models []struct {
			Name       string
			Dimensions int
			Default    bool
		}
	}
	if _, err := call(t, "GET", api+"/embeddings/models", key, nil, &catalogue); err != nil {
		t.Fatal(err)
	}
	// The default model: the seeded agent's memories are embedded with
	// it, and the OpenAI-compatible embeddings are asked for it.
	model, dimensions := "", 0
	for _, m := range catalogue.Models {
		if m.Default {
			model, dimensions = m.Name, m.Dimensions
		}
	}
	if dimensions == 0 {
		t.Fatalf("no default model in the catalogue: %+v", catalogue)
	}
	var models []struct{ ID string } // OpenAI's list: its data is the array
	if _, err := call(t, "GET", api+"/models", key, nil, &models); err != nil || !slices.ContainsFunc(models, func(m struct{ ID string }) bool { return m.ID == model }) {
		t.Fatalf("models: %v %+v lacks the default model %s", err, models, model)
	}
	return map[string]any{
		"marker":           marker,
		"agent":            agent,
		"doomed_agent":     "fuzz-doomed",
		"stateful_agent":   map[string]string{"agent": statefulAgent, "ref": statefulRef},
		"settings_agent":   "fuzz-settings",
		"memories":         memories,
		"memory_types":     types,
		"doomed_memory":    doomedMemory,
		"forgotten_memory": forgotten,
		"suggestions":      suggestions,
		"running_jobs":     runningJobs,
		"reembed_agents":   reembedAgents,
		"sync_agents":      syncAgents,
		"webhook":          webhook(),
		"doomed_webhook":   webhook(),
		"cycled_keys":      keysPerPhase("fuzz-cycled"),
		"doomed_keys":      keysPerPhase("fuzz-doomed"),
		"model":            model,
		"dimensions":       dimensions,
	}
}
