// Runs the suite with `node --test`, one test file at a time (each starts
// its own engram serve; the machine's cores are shared). The engram binary
// is ENGRAM_TEST_BINARY when set, else built here once for every file.
import { spawnSync } from "node:child_process";
import { readdirSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

import { binary } from "./server.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const files = readdirSync(here).filter((f) => f.endsWith(".test.mjs")).map((f) => join(here, f));
const given = process.env.ENGRAM_TEST_BINARY;
const env = { ...process.env, ENGRAM_TEST_BINARY: binary() };
// --test-concurrency came with Node.js 20.10; Debian 12's Node.js 18 lacks it.
const [major, minor] = process.versions.node.split(".").map(Number);
const oneAtATime = major > 20 || (major === 20 && minor >= 10) ? ["--test-concurrency=1"] : [];
const run = spawnSync(process.execPath, ["--test", ...oneAtATime, ...process.argv.slice(2), ...files], {
  stdio: "inherit",
  env,
});
if (!given) rmSync(dirname(env.ENGRAM_TEST_BINARY), { recursive: true, force: true });
process.exit(run.status ?? 1);
