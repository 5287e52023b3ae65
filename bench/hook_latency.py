"""Times whole hook processes (spawn, stdin, stdout, exit) for bench/hook-latency.sh."""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time


def run_once(argv, stdin, env, cwd):
    # A payload maker gives each run a session of its own: a session is given a memory once, so
    # a repeated session would time the no-op after the first run.
    stdin = stdin() if callable(stdin) else stdin
    t = time.perf_counter()
    p = subprocess.run(argv, input=stdin, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    took = (time.perf_counter() - t) * 1000
    if p.returncode != 0:
        raise SystemExit(f"{argv[0]} exited {p.returncode}")
    return took, p.stdout


def measure_interleaved(cases, runs, cwd):
    """Runs every case once per round, `runs` rounds: a slow minute of the machine weighs on
    every case alike, so the ratios stay honest."""
    times = {name: [] for name in cases}
    out = {}
    for _ in range(runs):
        for name, (argv, stdin, env) in cases.items():
            took, out[name] = run_once(argv, stdin, env, cwd)
            times[name].append(took)
    result = {}
    for name, ts in times.items():
        ts.sort()
        result[name] = {"median": statistics.median(ts), "p95": ts[int(len(ts) * 0.95) - 1], "min": ts[0], "out": out[name]}
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--ovmem", required=True)
    ap.add_argument("--hindsight-python", required=True)
    ap.add_argument("--hindsight-hook", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ovmem-bench-")
    home = os.path.join(tmp, "home")
    proj = os.path.join(tmp, "acme")
    os.makedirs(os.path.join(proj, ".git"))
    os.makedirs(home)
    env = {"HOME": home, "PATH": "/usr/bin:/bin"}
    topics = ["the staging database listens on port", "deploys use the blue-green pipeline on", "the flaky payments test is",
              "the partner API rate limit is", "the frontend build uses vite with", "migrations are reviewed by"]
    now = int(time.time())
    # Replies as long as a coding agent's (seven sentences, ~110 tokens), so each memory has passages
    # to search besides its first vector, as real turns do.
    said = ["I checked the configuration file and the service definition", "the health check now waits for the",
            "the integration tests pass against the container", "I left a comment in the pull request about",
            "the runbook has a new section on", "the dashboard shows the latency of", "we can revisit the retry budget for"]
    reply = lambda i: " ".join(f"{said[(i + k) % len(said)].capitalize()} {topics[(i + k) % len(topics)]} {i * 7 + k}."
                               for k in range(7))
    lines = [json.dumps({"bank": f"project:{proj}", "content": f"User: note {i}: {topics[i % len(topics)]} {i * 7}\nAssistant: Noted {i}. {reply(i)}",
                         "harness": "claude-code", "created_at": now - i * 60}) for i in range(10_000)]
    subprocess.run([a.ovmem, "memory", "import", "-"], input="\n".join(lines).encode(), env=env, check=True, stderr=subprocess.DEVNULL)
    # Every memory gets its vectors (an import writes words only), so each prompt searches them all.
    subprocess.run([a.ovmem, "sync", "--timeout", "600"], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stats = json.loads(subprocess.run([a.ovmem, "memory", "stats", "--json"], env=env, check=True,
                                      stdout=subprocess.PIPE).stdout)
    print(f"{stats['memories']} memories, every one with its vectors", flush=True)
    prompt = "Which port does the staging database listen on for integration tests?"
    runs = iter(range(10**9))
    claude = lambda: json.dumps({"session_id": f"bench-{next(runs)}", "cwd": proj, "hook_event_name": "UserPromptSubmit",
                                 "prompt": prompt}).encode()
    cline = lambda: json.dumps({"hookName": "UserPromptSubmit", "taskId": f"bench-{next(runs)}", "workspaceRoots": [proj],
                                "userPromptSubmit": {"prompt": prompt, "attachments": []}}).encode()
    hs_env = dict(env, HINDSIGHT_API_URL="http://127.0.0.1:9", HINDSIGHT_RECALL_TIMEOUT="1")
    results = measure_interleaved({
        "/bin/true": (["/bin/true"], b"", env),
        "ovmem hook cline UserPromptSubmit (10k memories)": ([a.ovmem, "hook", "cline", "UserPromptSubmit"], cline, env),
        "ovmem hook claude-code UserPromptSubmit (10k memories)": ([a.ovmem, "hook", "claude-code", "UserPromptSubmit"], claude, env),
    }, a.runs, proj)
    # hindsight-cline takes ~60 ms a run: fewer rounds, with /bin/true beside it again.
    slow = measure_interleaved({
        "/bin/true": (["/bin/true"], b"", env),
        "hindsight-cline UserPromptSubmit (server down)": ([a.hindsight_python, a.hindsight_hook], cline, hs_env),
    }, max(30, a.runs // 10), proj)
    results["hindsight-cline UserPromptSubmit (server down)"] = slow["hindsight-cline UserPromptSubmit (server down)"]
    out = results["ovmem hook claude-code UserPromptSubmit (10k memories)"]["out"].decode()
    assert "5433" in out or "port" in out, f"ovmem recalled nothing: {out}"
    floor = results["/bin/true"]["median"]
    ours = results["ovmem hook claude-code UserPromptSubmit (10k memories)"]["median"]
    hs = results["hindsight-cline UserPromptSubmit (server down)"]["median"]
    print(f"{'hook':58} {'median ms':>10} {'p95 ms':>8} {'x /bin/true':>12}")
    for name, r in results.items():
        print(f"{name:58} {r['median']:10.2f} {r['p95']:8.2f} {r['median'] / floor:12.1f}")
    print(f"\novmem prompt hook: {ours / floor:.1f}x /bin/true (target <= 5x at 10k memories); hindsight-cline is {hs / ours:.0f}x slower (target >= 10x)")


if __name__ == "__main__":
    main()
