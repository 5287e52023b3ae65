#!/usr/bin/env python3
"""Starts and stops the real memory servers for ovmem's tests, on 127.0.0.1 only (stdlib only).

  servers.py start --state DIR [--hindsight single|scaleout] [--workers N] [--hindsight-key KEY]
                   [--openviking dev|api_key|dev,api_key] [--openviking-root-key KEY]
                   [--openviking-users U1,U2] [--owner-pid PID]
  servers.py stop  --state DIR
  servers.py show  --state DIR

`start` runs the stub model (stub_llm.py), then what was asked for, each on a free loopback port,
waits until every /health answers, and writes DIR/state.json: every URL, every pid, the pg0
instance, the OpenViking user keys. Processes are started in their own process groups; `stop`
ends each group by its recorded pid (checking the pid still belongs to the process it started),
then stops PostgreSQL with `pg0 stop --name ...` and removes its data. With --owner-pid, a
watchdog process stops everything once that process is gone, so a test binary that dies (even by
SIGKILL) leaves nothing running. A failed start stops what it had started.

Topologies:
  hindsight single    pg0 PostgreSQL + one hindsight-api (with its in-process worker)
  hindsight scaleout  pg0 PostgreSQL + API nodes A and B (HINDSIGHT_API_WORKER_ENABLED=false)
                      + N hindsight-worker processes (--workers, default 1), all on one database
  openviking dev      openviking-server without a root key: identity from X-OpenViking-User
  openviking api_key  openviking-server with a root key; --openviking-users are provisioned
                      (account "ovmem") and their user keys written to the state file

PostgreSQL's initdb refuses root, so as root pg0 runs as `nobody` (runuser) from a copy of its
binary in a directory nobody owns; the API processes run as the caller.

The servers come from ${OVMEM_SERVERS_DIR:-~/.cache/ovmem-servers}, installed by install.sh.
"""
import argparse
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SERVERS_DIR = os.environ.get("OVMEM_SERVERS_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "ovmem-servers")
HS_VENV = os.path.join(SERVERS_DIR, "hindsight", "venv")
OV_VENV = os.path.join(SERVERS_DIR, "openviking", "venv")
START_TIMEOUT = float(os.environ.get("OVMEM_SERVERS_START_TIMEOUT", "180"))
# Seconds a server gets to exit after SIGTERM before SIGKILL (test data needs no clean shutdown).
STOP_GRACE = float(os.environ.get("OVMEM_SERVERS_STOP_GRACE", "5"))


class StartError(Exception):
    pass


def log(msg):
    print(f"servers: {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_start_time(pid):
    """Field 22 of /proc/PID/stat: tells a process from a later one that got the same pid."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def http_get(url, timeout=2.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read()


def http_json(method, url, body=None, headers=None, timeout=10.0):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read() or b"null")


class Lab:
    """The state directory and everything started from it."""

    def __init__(self, state_dir):
        self.dir = os.path.abspath(state_dir)
        self.logs = os.path.join(self.dir, "logs")
        self.path = os.path.join(self.dir, "state.json")
        self.state = {"processes": [], "pg0": None}
        if os.path.exists(self.path):
            with open(self.path) as f:
                self.state = json.load(f)

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.state, f, indent=2)
        os.replace(tmp, self.path)

    def spawn(self, name, argv, env=None, cwd=None):
        os.makedirs(self.logs, exist_ok=True)
        out = open(os.path.join(self.logs, f"{name}.log"), "ab")
        full_env = dict(os.environ)
        full_env.update(env or {})
        p = subprocess.Popen(
            argv, env=full_env, cwd=cwd or self.dir, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        out.close()
        self.state["processes"].append({"name": name, "pid": p.pid, "start": proc_start_time(p.pid), "argv0": argv[0]})
        self.save()
        return p

    def tail(self, name, lines=30):
        try:
            with open(os.path.join(self.logs, f"{name}.log"), errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no log)"

    def owner_alive(self):
        owner = self.state.get("owner")
        return owner is None or proc_start_time(owner["pid"]) == owner["start"]

    def wait_healthy(self, waits):
        """waits: list of (name, Popen, url). Returns once every url answers 200."""
        deadline = time.monotonic() + START_TIMEOUT
        pending = list(waits)
        while pending:
            if not self.owner_alive():
                raise StartError("the process that asked for the servers is gone")
            for item in list(pending):
                name, proc, url = item
                if proc is not None and proc.poll() is not None:
                    raise StartError(f"{name} exited with {proc.returncode} before it was healthy:\n{self.tail(name)}")
                try:
                    status, _ = http_get(url, timeout=1.0)
                    if status == 200:
                        pending.remove(item)
                        log(f"{name} healthy after {time.monotonic() - self.t0:.1f}s at {url}")
                except (urllib.error.URLError, OSError, ValueError):
                    pass
            if time.monotonic() > deadline:
                names = ", ".join(n for n, _, _ in pending)
                raise StartError(f"{names} not healthy within {START_TIMEOUT:.0f}s:\n" + "\n".join(self.tail(n) for n in names.split(", ")))
            if pending:
                time.sleep(0.2)


# ---------------------------------------------------------------------------------------------
# Stub


def start_stub(lab):
    port_file = os.path.join(lab.dir, "stub.port")
    if os.path.exists(port_file):
        os.remove(port_file)
    argv = [sys.executable, os.path.join(HERE, "stub_llm.py"), "--port-file", port_file]
    if os.environ.get("OVMEM_STUB_LOG"):
        argv += ["--log", os.path.join(lab.logs, "stub-requests.jsonl")]
    p = lab.spawn("stub", argv)
    deadline = time.monotonic() + 20
    while not os.path.exists(port_file):
        if p.poll() is not None:
            raise StartError(f"the stub model exited with {p.returncode}:\n{lab.tail('stub')}")
        if time.monotonic() > deadline:
            raise StartError("the stub model did not bind a port within 20s")
        time.sleep(0.05)
    with open(port_file) as f:
        port = int(f.read())
    url = f"http://127.0.0.1:{port}"
    lab.state["stub"] = {"url": url, "pid": p.pid}
    lab.save()
    return p, url + "/health"


# ---------------------------------------------------------------------------------------------
# Hindsight


def pg0_command(pg, *args):
    binary = os.path.join(pg["dir"], "pg0")
    cmd = ["env", f"HOME={pg['dir']}", binary, *args]
    if pg["as_nobody"]:
        cmd = ["runuser", "-u", "nobody", "--"] + cmd
    return cmd


def start_pg0(lab):
    if not os.path.exists(os.path.join(HS_VENV, "bin", "hindsight-api")):
        raise StartError(f"Hindsight is not installed in {HS_VENV} (run tests/servers/install.sh)")
    source = os.path.join(HS_VENV, "lib", f"python{sys.version_info.major}.{sys.version_info.minor}", "site-packages", "pg0", "bin", "pg0")
    if not os.path.exists(source):
        found = [os.path.join(r, "pg0") for r, _, files in os.walk(os.path.join(HS_VENV, "lib")) if "pg0" in files and r.endswith(os.path.join("pg0", "bin"))]
        if not found:
            raise StartError(f"no pg0 binary in {HS_VENV}")
        source = found[0]
    as_nobody = os.geteuid() == 0
    # Outside the state dir: nobody must be able to reach it, and /root or a 0700 temp dir are closed.
    pg_dir = tempfile.mkdtemp(prefix="ovmem-pg0-", dir="/tmp")
    pg = {"dir": pg_dir, "name": "ovmem-" + os.path.basename(pg_dir).split("-")[-1], "port": free_port(), "as_nobody": as_nobody}
    lab.state["pg0"] = pg
    lab.save()
    shutil.copy2(source, os.path.join(pg_dir, "pg0"))
    if as_nobody:
        nobody = pwd.getpwnam("nobody")
        for root, dirs, files in os.walk(pg_dir):
            for name in dirs + files:
                os.chown(os.path.join(root, name), nobody.pw_uid, nobody.pw_gid)
        os.chown(pg_dir, nobody.pw_uid, nobody.pw_gid)
    os.chmod(pg_dir, 0o700)
    cmd = pg0_command(pg, "start", "--name", pg["name"], "-p", str(pg["port"]), "-u", "hindsight", "-P", "hindsight", "-n", "hindsight")
    os.makedirs(lab.logs, exist_ok=True)
    with open(os.path.join(lab.logs, "pg0.log"), "ab") as out:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, timeout=120)
    if r.returncode != 0:
        raise StartError(f"pg0 start failed ({r.returncode}):\n{lab.tail('pg0')}")
    pg["url"] = f"postgresql://hindsight:hindsight@127.0.0.1:{pg['port']}/hindsight"
    lab.save()
    log(f"pg0 up after {time.monotonic() - lab.t0:.1f}s on port {pg['port']}")
    return pg


def hindsight_env(lab, db_url, key):
    stub = lab.state["stub"]["url"] + "/v1"
    env = {
        "HF_HUB_OFFLINE": "1",
        "HINDSIGHT_API_HOST": "127.0.0.1",
        "HINDSIGHT_API_DATABASE_URL": db_url,
        "HINDSIGHT_API_EMBEDDINGS_PROVIDER": "openai",
        "HINDSIGHT_API_EMBEDDINGS_OPENAI_BASE_URL": stub,
        "HINDSIGHT_API_EMBEDDINGS_OPENAI_API_KEY": "stub",
        "HINDSIGHT_API_EMBEDDINGS_OPENAI_MODEL": "stub-embed",
        "HINDSIGHT_API_EMBEDDINGS_OPENAI_DIMENSIONS": "1024",
        "HINDSIGHT_API_RERANKER_PROVIDER": "rrf",
        "HINDSIGHT_API_LLM_PROVIDER": "openai",
        "HINDSIGHT_API_LLM_BASE_URL": stub,
        "HINDSIGHT_API_LLM_API_KEY": "stub",
        "HINDSIGHT_API_LLM_MODEL": "stub-llm",
    }
    if key:
        env["HINDSIGHT_API_TENANT_EXTENSION"] = "hindsight_api.extensions.builtin.tenant:ApiKeyTenantExtension"
        env["HINDSIGHT_API_TENANT_API_KEY"] = key
    return env


def start_hindsight(lab, topology, workers, key):
    pg = start_pg0(lab)
    base = hindsight_env(lab, pg["url"], key)
    api = os.path.join(HS_VENV, "bin", "hindsight-api")
    info = {"topology": topology, "auth": bool(key), "nodes": [], "workers": []}
    lab.state["hindsight"] = info
    if topology == "single":
        port = free_port()
        p = lab.spawn("hindsight", [api, "--port", str(port)], dict(base, HINDSIGHT_API_PORT=str(port), HINDSIGHT_API_WORKER_ID="ovmem-test"))
        info["url"] = f"http://127.0.0.1:{port}"
        info["nodes"].append(info["url"])
        lab.save()
        return [("hindsight", p, info["url"] + "/health")]
    # Scale-out: node A first, alone, so that one process runs the migrations on the empty database.
    node_env = dict(base, HINDSIGHT_API_WORKER_ENABLED="false")
    port_a = free_port()
    pa = lab.spawn("hindsight-a", [api, "--port", str(port_a)], dict(node_env, HINDSIGHT_API_PORT=str(port_a), HINDSIGHT_API_WORKER_ID="node-a"))
    info["url"] = f"http://127.0.0.1:{port_a}"
    info["nodes"].append(info["url"])
    lab.save()
    return [("hindsight-a", pa, info["url"] + "/health"), ("_then_scaleout", (node_env, workers), None)]


def start_hindsight_rest(lab, node_env, workers):
    info = lab.state["hindsight"]
    api = os.path.join(HS_VENV, "bin", "hindsight-api")
    worker = os.path.join(HS_VENV, "bin", "hindsight-worker")
    waits = []
    port_b = free_port()
    pb = lab.spawn("hindsight-b", [api, "--port", str(port_b)], dict(node_env, HINDSIGHT_API_PORT=str(port_b), HINDSIGHT_API_WORKER_ID="node-b"))
    info["url_b"] = f"http://127.0.0.1:{port_b}"
    info["nodes"].append(info["url_b"])
    waits.append(("hindsight-b", pb, info["url_b"] + "/health"))
    worker_env = {k: v for k, v in node_env.items() if k != "HINDSIGHT_API_WORKER_ENABLED"}
    for i in range(1, workers + 1):
        port = free_port()
        wid = f"w{i}"
        p = lab.spawn(f"hindsight-worker-{wid}", [worker, "--worker-id", wid, "--http-port", str(port), "--http-host", "127.0.0.1"], worker_env)
        info["workers"].append({"id": wid, "url": f"http://127.0.0.1:{port}"})
        waits.append((f"hindsight-worker-{wid}", p, f"http://127.0.0.1:{port}/health"))
    lab.save()
    return waits


# ---------------------------------------------------------------------------------------------
# OpenViking


def start_openviking(lab, mode, root_key):
    server = os.path.join(OV_VENV, "bin", "openviking-server")
    if not os.path.exists(server):
        raise StartError(f"OpenViking is not installed in {OV_VENV} (run tests/servers/install.sh)")
    port = free_port()
    root = os.path.join(lab.dir, f"openviking-{mode}")
    for sub in ("home", "workspace"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    stub = lab.state["stub"]["url"] + "/v1"
    conf = {
        "server": {"host": "127.0.0.1", "port": port},
        "storage": {"workspace": os.path.join(root, "workspace")},
        "embedding": {"dense": {"provider": "openai", "model": "stub-embed", "api_key": "stub", "api_base": stub, "dimension": 1024, "input": "text"}},
        "vlm": {"provider": "openai", "model": "stub-llm", "api_key": "stub", "api_base": stub, "temperature": 0.0, "max_retries": 1},
    }
    if mode == "api_key":
        conf["server"]["root_api_key"] = root_key
    conf_path = os.path.join(root, "ov.conf")
    fd = os.open(conf_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(conf, f, indent=2)
    name = f"openviking-{mode}"
    p = lab.spawn(name, [server, "--config", conf_path], {"HOME": os.path.join(root, "home"), "OPENVIKING_CONFIG_FILE": conf_path}, cwd=root)
    url = f"http://127.0.0.1:{port}"
    lab.state.setdefault("openviking", {})[mode] = {"url": url, "users": {}}
    lab.save()
    return [(name, p, url + "/health")]


def provision_openviking(lab, root_key, users):
    info = lab.state["openviking"]["api_key"]
    admin = {"X-API-Key": root_key}
    account = "ovmem"
    first, rest = users[0], users[1:]
    r = http_json("POST", info["url"] + "/api/v1/admin/accounts", {"account_id": account, "admin_user_id": first}, admin)
    info["account"] = account
    info["users"][first] = (r.get("result") or {}).get("user_key")
    for user in rest:
        r = http_json("POST", f"{info['url']}/api/v1/admin/accounts/{account}/users", {"user_id": user, "role": "user"}, admin)
        info["users"][user] = (r.get("result") or {}).get("user_key")
    missing = [u for u, k in info["users"].items() if not k]
    if missing:
        raise StartError(f"OpenViking gave no user key for {', '.join(missing)}")
    lab.save()


# ---------------------------------------------------------------------------------------------
# Stop


def stop(lab):
    t0 = time.monotonic()
    problems = []
    for proc in reversed(lab.state.get("processes", [])):
        pid = proc["pid"]
        if proc_start_time(pid) != proc["start"]:
            continue  # gone already (or the pid now belongs to someone else)
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        except PermissionError as e:
            problems.append(f"{proc['name']} ({pid}): {e}")
            continue
    deadline = time.monotonic() + STOP_GRACE
    for proc in reversed(lab.state.get("processes", [])):
        pid = proc["pid"]
        while proc_start_time(pid) == proc["start"] and time.monotonic() < deadline:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.1)
        if proc_start_time(pid) == proc["start"]:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        # Members of the group that outlived the leader (uvicorn children, helper threads in processes).
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    pg = lab.state.get("pg0")
    if pg and os.path.isdir(pg["dir"]):
        try:
            subprocess.run(pg0_command(pg, "stop", "--name", pg["name"]), stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            problems.append(f"pg0 stop: {e}")
        postgres_left = pids_with_cwd_or_arg(pg["dir"])
        for pid in postgres_left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(pg["dir"], ignore_errors=True)
    lab.state["processes"] = []
    lab.state["pg0"] = None
    lab.state["stopped"] = True
    lab.save()
    for msg in problems:
        log(msg)
    log(f"stopped in {time.monotonic() - t0:.1f}s")
    return 0 if not problems else 1


def pids_with_cwd_or_arg(path):
    """Processes whose command line mentions `path` (PostgreSQL left behind by a failed pg0 stop)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if path.encode() in f.read():
                    found.append(int(entry))
        except OSError:
            pass
    return found


def watchdog(state_dir, owner):
    """Forked child: waits for the owner to go, then ends a start still under way and stops
    everything."""
    child = os.fork()
    if child != 0:
        os.waitpid(child, 0)
        return
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    owner_start = proc_start_time(owner)
    while proc_start_time(owner) == owner_start and owner_start is not None:
        time.sleep(0.5)
        if Lab(state_dir).state.get("stopped"):
            os._exit(0)
    lab = Lab(state_dir)
    starter = lab.state.get("starter")
    if starter and proc_start_time(starter["pid"]) == starter["start"]:
        try:
            os.kill(starter["pid"], signal.SIGTERM)
        except ProcessLookupError:
            pass
        for _ in range(100):
            if proc_start_time(starter["pid"]) != starter["start"]:
                break
            time.sleep(0.1)
    stop(Lab(state_dir))
    os._exit(0)


# ---------------------------------------------------------------------------------------------


def on_sigterm(signum, frame):
    raise StartError("interrupted (SIGTERM)")


def cmd_start(args):
    signal.signal(signal.SIGTERM, on_sigterm)
    os.makedirs(args.state, exist_ok=True)
    lab = Lab(args.state)
    if lab.state.get("processes") and not lab.state.get("stopped"):
        stop(lab)
    lab.state = {"processes": [], "pg0": None, "dir": lab.dir, "starter": {"pid": os.getpid(), "start": proc_start_time(os.getpid())}}
    if args.owner_pid:
        lab.state["owner"] = {"pid": args.owner_pid, "start": proc_start_time(args.owner_pid)}
    lab.save()
    lab.t0 = time.monotonic()
    if args.owner_pid:
        watchdog(lab.dir, args.owner_pid)
    try:
        stub_proc, stub_health = start_stub(lab)
        waits = [("stub", stub_proc, stub_health)]
        after_a = None
        if args.hindsight:
            for item in start_hindsight(lab, args.hindsight, args.workers, args.hindsight_key):
                if item[0] == "_then_scaleout":
                    after_a = item[1]
                else:
                    waits.append(item)
        ov_modes = [m for m in (args.openviking or "").split(",") if m]
        for mode in ov_modes:
            if mode not in ("dev", "api_key"):
                raise StartError(f"--openviking takes dev and/or api_key, not {mode}")
            waits.extend(start_openviking(lab, mode, args.openviking_root_key))
        if after_a:
            lab.wait_healthy([w for w in waits if w[0] == "hindsight-a"])
            waits = [w for w in waits if w[0] != "hindsight-a"] + start_hindsight_rest(lab, *after_a)
        lab.wait_healthy(waits)
        if "api_key" in ov_modes and args.openviking_users:
            provision_openviking(lab, args.openviking_root_key, [u for u in args.openviking_users.split(",") if u])
    except (StartError, OSError, urllib.error.URLError, subprocess.SubprocessError) as e:
        log(f"start failed: {e}")
        stop(lab)
        return 1
    lab.state["started_seconds"] = round(time.monotonic() - lab.t0, 1)
    lab.save()
    log(f"all up in {lab.state['started_seconds']}s; state in {lab.path}")
    return 0


def main():
    ap = argparse.ArgumentParser(description="Start and stop the memory servers for ovmem's tests.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("start")
    s.add_argument("--state", required=True)
    s.add_argument("--hindsight", choices=["single", "scaleout"])
    s.add_argument("--workers", type=int, default=1)
    s.add_argument("--hindsight-key", help="turn on Hindsight's API-key tenant extension with this key")
    s.add_argument("--openviking", help="dev, api_key or dev,api_key")
    s.add_argument("--openviking-root-key", default="ovmem-test-root-key")
    s.add_argument("--openviking-users", default="")
    s.add_argument("--owner-pid", type=int)
    for name in ("stop", "show"):
        p = sub.add_parser(name)
        p.add_argument("--state", required=True)
    args = ap.parse_args()
    if args.cmd == "start":
        return cmd_start(args)
    lab = Lab(args.state)
    if args.cmd == "stop":
        return stop(lab)
    json.dump(lab.state, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
