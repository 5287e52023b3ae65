#!/usr/bin/env node
// The `ovmem` npm launcher: finds the platform package npm installed next to it (an optional
// dependency, chosen by npm from its `os`/`cpu`) and runs its binary with this process's
// arguments, stdio, exit code and signals. Nothing is downloaded at install or run time.
"use strict";

const { spawn } = require("child_process");
const fs = require("fs");
const path = require("path");

const PLATFORMS = {
  "linux-x64": "@ovmem/linux-x64",
  "linux-arm64": "@ovmem/linux-arm64",
  "darwin-x64": "@ovmem/darwin-x64",
  "darwin-arm64": "@ovmem/darwin-arm64",
  "win32-x64": "@ovmem/win32-x64",
  "win32-arm64": "@ovmem/win32-arm64",
};

function binary() {
  const key = `${process.platform}-${process.arch}`;
  const pkg = PLATFORMS[key];
  if (!pkg) {
    fail(`ovmem has no prebuilt binary for ${key}; build it from source: cargo install --locked ovmem`);
  }
  const exe = process.platform === "win32" ? "ovmem.exe" : "ovmem";
  const candidates = [];
  try {
    candidates.push(path.join(path.dirname(require.resolve(`${pkg}/package.json`)), "bin", exe));
  } catch {
    // Not resolvable from here (a global install puts it beside this package instead).
  }
  const root = path.join(__dirname, "..");
  candidates.push(path.join(root, "node_modules", pkg, "bin", exe));
  candidates.push(path.join(root, "..", pkg, "bin", exe));
  if (path.basename(path.dirname(root)) === "@ovmem") {
    candidates.push(path.join(root, "..", "..", pkg, "bin", exe));
  }
  const found = candidates.find((c) => fs.existsSync(c));
  if (!found) {
    fail(
      `the package ${pkg} (ovmem's binary for ${key}) is not installed; ` +
        `reinstall with optional dependencies: npm install -g ovmem`,
    );
  }
  return found;
}

function fail(message) {
  process.stderr.write(`ovmem: ${message}\n`);
  process.exit(1);
}

const child = spawn(binary(), process.argv.slice(2), { stdio: "inherit", windowsHide: true });
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"]) {
  process.on(sig, () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(sig);
    }
  });
}
child.on("error", (e) => fail(`could not run ${e.path || "the binary"}: ${e.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    // Die of the same signal, so the caller sees what the binary saw.
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code === null ? 1 : code);
});
