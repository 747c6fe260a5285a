// Starts the real `engram serve` for a test file, on a random loopback
// port with a temp data dir and a hermetic environment, and registers
// users through the outbox as internal/testserver does for the Go tests.
import { spawn, execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { Engram } from "../dist/index.js";
import { watch } from "./openapi_check.mjs";

const repoRoot = resolve(fileURLToPath(import.meta.url), "../../../..");
let builtBinary;

/** The engram binary: ENGRAM_TEST_BINARY, or one `go build` per test process. */
export function binary() {
  if (process.env.ENGRAM_TEST_BINARY) return process.env.ENGRAM_TEST_BINARY;
  if (!builtBinary) {
    const dir = mkdtempSync(join(tmpdir(), "engram-ts-bin-"));
    builtBinary = join(dir, "engram");
    execFileSync("go", ["build", "-o", builtBinary, "./cmd/engram"], { cwd: repoRoot, stdio: "inherit" });
  }
  return builtBinary;
}

// What the server process takes from the test's environment; everything
// else (ENGRAM_*, OPENAI_*, HOME) would make a result depend on the machine.
const inherited = ["PATH", "TMPDIR", "TZ", "LANG", "LC_ALL", "LC_CTYPE", "GORACE", "GOCOVERDIR", "GOTRACEBACK"];

/**
 * start launches `engram serve` with extra flags and resolves to
 * { apiURL, dataDir, stop, log } once /readyz answers 200. The data dir is
 * options.dataDir (created here), else a new temporary directory.
 */
export async function start(args = [], options = {}) {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "engram-ts-data-"));
  mkdirSync(dataDir, { recursive: true });
  const home = mkdtempSync(join(tmpdir(), "engram-ts-home-"));
  const env = { HOME: home, ENGRAM_HOME: home };
  for (const name of inherited) if (process.env[name] !== undefined) env[name] = process.env[name];
  const proc = spawn(binary(), ["serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir, ...args], {
    env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  const addr = await new Promise((resolveAddr, reject) => {
    const timer = setTimeout(() => reject(new Error(`engram serve did not start:\n${log}`)), 60_000);
    proc.stderr.setEncoding("utf8");
    proc.stderr.on("data", (chunk) => {
      log = (log + chunk).slice(-20_000);
      const m = /msg="engram serving" addr=(\S+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolveAddr(m[1]);
      }
    });
    proc.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`engram serve exited with ${code}:\n${log}`));
    });
  });
  const baseURL = `http://${addr}`;
  for (let i = 0; ; i++) {
    const r = await fetch(`${baseURL}/readyz`).catch(() => undefined);
    if (r?.status === 200) break;
    if (i > 300) throw new Error(`engram serve not ready:\n${log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  await watch(baseURL);
  const exited = new Promise((r) => proc.on("exit", r));
  return {
    apiURL: `${baseURL}/v1`,
    baseURL,
    dataDir,
    log: () => log,
    async stop() {
      proc.kill("SIGTERM");
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** decodeQuotedPrintable undoes the mail's Content-Transfer-Encoding. */
function decodeQuotedPrintable(text) {
  return text.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16)));
}

/** The verification token of the newest mail to email in the outbox, or undefined. */
function tokenFor(outbox, email, since) {
  let names;
  try {
    names = readdirSync(outbox).filter((n) => n.endsWith(".eml"));
  } catch {
    return undefined;
  }
  // Names start with a nanosecond timestamp, so name order is write order.
  for (const name of names.sort().reverse()) {
    const path = join(outbox, name);
    if (statSync(path).mtimeMs < since) continue;
    const raw = readFileSync(path, "utf8").replace(/\r\n/g, "\n");
    const [head, ...rest] = raw.split("\n\n");
    const to = /^To:\s*(.*)$/im.exec(head)?.[1] ?? "";
    if (!to.toLowerCase().includes(email.toLowerCase())) continue;
    let body = rest.join("\n\n");
    if (/^Content-Transfer-Encoding:\s*quoted-printable/im.test(head)) body = decodeQuotedPrintable(body);
    const link = /\?token=([A-Za-z0-9_-]+)\s*$/m.exec(body)?.[1];
    const alone = body.split("\n").map((l) => l.trim()).find((l) => /^[A-Za-z0-9_-]{16,}$/.test(l));
    if (!link || link !== alone) throw new Error(`mail lacks one token in a link and alone on a line:\n${body}`);
    return link;
  }
  return undefined;
}

/** The token mailed to email, polled for up to 10 s. */
export async function mailedToken(server, email, since) {
  const outbox = join(server.dataDir, "outbox");
  for (let i = 0; i < 500; i++) {
    const token = tokenFor(outbox, email, since);
    if (token) return token;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no verification mail to ${email} in ${outbox}`);
}

/**
 * register creates a verified user through the SDK (register, the token
 * from the outbox, verify) and returns a client authenticated with its
 * first API key.
 */
export async function register(server, email, options = {}) {
  const anonymous = new Engram({ baseURL: server.apiURL, apiKey: "" });
  const since = Date.now() - 1000; // outbox mtimes have 1 s of slack
  await anonymous.auth.register({ email });
  const token = await mailedToken(server, email, since);
  const verified = await anonymous.auth.verify({ token });
  return new Engram({ baseURL: server.apiURL, apiKey: verified.api_key, ...options });
}
