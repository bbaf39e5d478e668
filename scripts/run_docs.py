#!/usr/bin/env python3
"""make test's layer "docs": every SQL and shell block of README.md and docs/,
run in order, as written, on a throwaway cluster set up as the README says.
docs/testing.md ("The documents") states the rules; in short:

  ```sql                        ```sh
  -- as app                     # as root
  ...                           ...

The first line names who runs the block: a database role (and the database
after "in", default app), or an operating-system account (root, postgres).
"<!-- illustration: why -->" on the line before a block: not run, counted.
A ```text block right after a block that ran: what it prints, compared.
README.md runs first; each guide then on a copy of the cluster as the README
left it.

Usage: run_docs.py [--list] [--readme FILE] [FILE...]   (default: README.md and docs/*.md)
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PG_MAJOR = os.environ.get("FW_PG_MAJOR", "15")
PG_BIN = os.environ.get("FW_PG_BIN", f"/usr/lib/postgresql/{PG_MAJOR}/bin")
RUN_USER = os.environ.get("FW_RUN_USER", "postgres")
CLOCK = "2031-01-01 12:00:20+00"


def free_port():
    """A TCP port of localhost that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


AS_ROOT = os.geteuid() == 0

FENCE = re.compile(r"^( *)(`{3,}|~{3,})\s*([^`\s]*)(.*)$")   # indent, fence, language, the rest
ILLUSTRATION = re.compile(r"^ *<!-- illustration: (.+?) -->\s*$")
SQL_AS = re.compile(r"^-- as ([a-z_][a-z0-9_]*)(?: \([^)]*\))?(?:,? in (?:database )?([a-z_][a-z0-9_]*))?\b")
SH_AS = re.compile(r"^# as (root|postgres)\b")


# What a block's language says: run (sql, sh), or shown only.  Anything else
# (bash, psql, SQL, console, ...) is refused, so that no command escapes the
# test by the name of its fence.
RUN = ("sql", "sh")
SHOWN = ("text", "", "ini", "yaml", "json", "python", "javascript", "conf")


class Block:
    def __init__(self, path, line, lang, text, marked):
        self.path, self.line, self.lang, self.text, self.marked = path, line, lang, text, marked
        self.output = None          # the ```text block shown after it, if any

    def where(self):
        return f"{os.path.relpath(self.path, ROOT)}:{self.line}"


def parse(path):
    """The fenced blocks of a Markdown file, in order."""
    blocks, marked, lines = [], None, open(path, encoding="utf-8").read().split("\n")
    i, prev = 0, None
    while i < len(lines):
        m = ILLUSTRATION.match(lines[i])
        if m:
            marked = m.group(1)
            i += 1
            continue
        m = FENCE.match(lines[i])
        if not m:
            if lines[i].strip():
                marked, prev = None, None
            i += 1
            continue
        indent, fence, lang, start, body = len(m.group(1)), m.group(2), m.group(3), i + 1, []
        if m.group(4).strip():
            lang += " " + m.group(4).strip()     # an info string beyond the language: refused below
        closing = re.compile(r"^ *" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$")
        i += 1
        while i < len(lines) and not closing.match(lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent] == " " * indent else lines[i].lstrip(" "))
            i += 1
        i += 1
        text = "\n".join(body) + "\n"
        if lang == "text" and prev is not None and marked is None:
            prev.output = text
            prev = None
        else:
            b = Block(path, start, lang, text, marked)
            blocks.append(b)
            prev = b if lang in ("sql", "sh") and marked is None else None
        marked = None
    return blocks


def matches(expected, actual):
    """Whether the lines printed match those shown ("..." = any lines)."""
    def clean(text):
        out = [re.sub(r"^psql:<stdin>:\d+: ", "", l).rstrip() for l in text.split("\n")]
        while out and not out[0]:
            out.pop(0)
        while out and not out[-1]:
            out.pop()
        return out
    exp, act = clean(expected), clean(actual)

    def walk(e, a):
        if e == len(exp):
            return a == len(act)
        if exp[e] == "...":
            return any(walk(e + 1, k) for k in range(a, len(act) + 1))
        return a < len(act) and exp[e] == act[a] and walk(e + 1, a + 1)
    return walk(0, 0)


class Cluster:
    def __init__(self, work):
        self.work, self.data, self.home = work, os.path.join(work, "data"), os.path.join(work, "home")
        self.port = free_port()
        self.env = dict(os.environ)
        self.env.update(PGHOST=work, PGPORT=self.port, LANG="C.UTF-8", LC_ALL="C.UTF-8",
                        PATH=f"{work}/bin:{PG_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        for var in ("PGUSER", "PGDATABASE", "PGOPTIONS", "PGSERVICE", "PGPASSWORD"):
            self.env.pop(var, None)
        self.env["FW_DOCS_DATA"] = self.data
        self.env["FW_DOCS_PSQL"] = os.path.join(PG_BIN, "psql")
        self.env["FW_DOCS_USER"] = RUN_USER if AS_ROOT else ""

    def as_user(self, argv):
        return ["runuser", "-u", RUN_USER, "--"] + argv if AS_ROOT else argv

    def run(self, argv, **kw):
        return subprocess.run(self.as_user(argv), env=self.env, check=True, stdout=subprocess.DEVNULL, **kw)

    def init(self):
        # Local connections trusted (a block connects as the role it names);
        # TCP ones as Debian's, by password (scram-sha-256).
        self.run(["initdb", "-D", self.data, "--auth-local=trust", "--auth-host=scram-sha-256",
                  "-U", "postgres", "--no-sync"])
        with open(os.path.join(self.data, "postgresql.conf"), "a") as conf:
            conf.write(f"listen_addresses = 'localhost'\nunix_socket_directories = '{self.work}'\nport = {self.port}\n"
                       f"fsync = off\nfixed_window.debug_now = '{CLOCK}'\n")
        self.start()

    def start(self):
        self.run(["pg_ctl", "-D", self.data, "-l", os.path.join(self.work, "server.log"), "-w", "start"])

    def stop(self):
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            self.run(["pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop"])

    # cp -a, not shutil.copytree: run as root, the copy must stay the
    # server account's, which copytree does not keep.
    def save(self):
        self.stop()
        # A copied data directory is another database to the saved
        # shared-memory counters (its PG_VERSION file is another file), which
        # are then dropped, or kept when the copy happens to reuse the file's
        # inode: so that every guide starts alike, none is saved.
        saved = os.path.join(self.data, "pg_stat", "fixed_window.stat")
        if os.path.exists(saved):
            os.unlink(saved)
        self.run(["cp", "-a", self.data, self.data + ".readme"])     # as the server's account

    def restore(self):
        self.stop()
        shutil.rmtree(self.data)
        shutil.rmtree(self.home)        # and the account's home, as the README left it: empty
        os.makedirs(self.home)
        if AS_ROOT:
            subprocess.run(["chown", RUN_USER, self.home], check=True)
        self.run(["cp", "-a", self.data + ".readme", self.data])
        self.start()


SUDO = r"""#!/bin/bash
# The documents' sudo, in the docs test: a Debian root shell has none, and a
# block says the account that runs it, so a block must not need it.
echo "sudo: a root shell on Debian has no sudo; write the command as root runs it, and say \"sudo\" in the text" >&2
exit 127
"""
PSQL = r"""#!/bin/bash
# psql in the documents' shell blocks stops at its first error, and fails the
# block (-X or not): a script's errors would scroll past a reader.
exec "$FW_DOCS_PSQL" -v ON_ERROR_STOP=1 "$@"
"""
PG_CTLCLUSTER = r"""#!/bin/bash
# The documents' pg_ctlcluster VERSION main ACTION, in the docs test: acts on
# the test's cluster, never on the system's.
[ $# -eq 3 ] || { echo "pg_ctlcluster: usage: pg_ctlcluster VERSION CLUSTER ACTION" >&2; exit 1; }
set -- pg_ctl -D "$FW_DOCS_DATA" -l "$FW_DOCS_DATA/../server.log" -w "$3"
if [ -n "$FW_DOCS_USER" ] && [ "$(id -un)" != "$FW_DOCS_USER" ]; then
    exec runuser -u "$FW_DOCS_USER" -- env PATH="$PATH" "$@" >/dev/null
fi
exec "$@" >/dev/null
"""


BLOCK_TIMEOUT = int(os.environ.get("FW_DOCS_TIMEOUT", "600"))   # seconds: a server started in the foreground never ends


def run_argv(argv, text, env, cwd):
    """Run one block's program with the block on its standard input, in a
    process group of its own, so that whatever it left running can be ended."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env, cwd=cwd, start_new_session=True)
    try:
        out, _ = proc.communicate(text, timeout=BLOCK_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        out += f"\n(the block did not end within {BLOCK_TIMEOUT} s, and was killed)\n"
        return 124, out
    return proc.returncode, out


def run_block(cluster, block, clone):
    """Run one block; return (ok, printed)."""
    first = block.text.split("\n", 1)[0]
    shows_error = block.output is not None and re.search(r"^(psql:\S+ )?ERROR:", block.output, re.M)
    if block.output is not None and not any(l.strip() not in ("", "...") for l in block.output.split("\n")):
        return False, "the output shown is only \"...\": show what the block prints\n"
    if block.lang == "sql":
        m = SQL_AS.match(first)
        if not m:
            return False, "the block does not say who runs it (a first line \"-- as ROLE [in DATABASE]\")\n"
        if re.search(r"ON_ERROR_STOP", block.text, re.I):
            return False, "the block names ON_ERROR_STOP: the test decides it\n"
        if re.search(r"^\s*\\(if|elif|else|endif|c|connect|i|ir|include)\b", block.text, re.M):
            return False, "the block uses \\if, \\c or \\i: a block is one session of its role, all of it shown\n"
        # As a reader pasting it into psql: a block that shows an error goes
        # on after it, and what follows must be shown too; any other block
        # stops at its first error, and fails.
        stop = "0" if shows_error else "1"
        argv = [os.path.join(PG_BIN, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=" + stop, "-U", m.group(1), "-d", m.group(2) or "app"]
        argv, env = cluster.as_user(argv), cluster.env
    else:
        m = SH_AS.match(first)
        if not m:
            return False, "the block does not say who runs it (a first line \"# as root\" or \"# as postgres\")\n"
        if shows_error:
            return False, "a shell block shows an ERROR: show errors in sql blocks, which go on after them\n"
        argv, env = ["bash", "-e", "-o", "pipefail"], cluster.env
        if m.group(1) == "postgres":
            # su postgres: the directory kept, HOME the account's own (here a
            # private one, where Debian's is /var/lib/postgresql)
            env = dict(env, HOME=cluster.home)
            if AS_ROOT:
                argv = cluster.as_user(argv)
    returncode, printed = run_argv(argv, block.text, env, clone)
    ok = returncode == 0
    if ok and block.output is not None:
        ok = matches(block.output, printed)
    if ok and shows_error:
        # as many errors printed as shown: "..." may stand for rows, never for an error
        errors = lambda text: len(re.findall(r"^(?:psql:\S+ )?ERROR:", text, re.M))
        if errors(printed) != errors(block.output):
            ok = False
    return ok, printed


def main():
    args = sys.argv[1:]
    listing = "--list" in args
    readme = os.path.join(ROOT, "README.md")
    if "--readme" in args:          # another file in the README's place (to try an old one)
        k = args.index("--readme")
        readme = os.path.abspath(args[k + 1])
        del args[k:k + 2]
    files = [a for a in args if a != "--list"] or \
        [os.path.join(ROOT, "README.md")] + sorted(
            os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    files = [os.path.abspath(f) for f in files if os.path.abspath(f) != os.path.join(ROOT, "README.md")]
    if readme not in files:
        files.insert(0, readme)     # every guide builds on the README's set-up
    docs = [(f, parse(f)) for f in files]
    if listing:
        for f, blocks in docs:
            for b in blocks:
                state = "marked: " + b.marked if b.marked else ("run" if b.lang in ("sql", "sh") else "shown")
                print(f"{b.where()}\t{b.lang or '-'}\t{state}{', output compared' if b.output else ''}")
        return 0

    work = tempfile.mkdtemp(prefix="fixed_window_docs.")
    os.chmod(work, 0o755)
    os.makedirs(os.path.join(work, "bin"))
    for name, text in (("sudo", SUDO), ("pg_ctlcluster", PG_CTLCLUSTER), ("psql", PSQL)):
        with open(os.path.join(work, "bin", name), "w") as f:
            f.write(text)
        os.chmod(os.path.join(work, "bin", name), 0o755)
    clone = os.path.join(work, "clone")
    subprocess.run(f"tar -C '{ROOT}' --exclude=.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' "
                   f"-cf - . | tar -C '{clone}' -xf -", shell=True, check=True,
                   preexec_fn=lambda: os.makedirs(clone))
    # The clone stays root's, as a DBA's is: a block of postgres's may read it, not write in it.
    os.makedirs(os.path.join(work, "home"))
    if AS_ROOT:
        subprocess.run(["chown", RUN_USER, work, os.path.join(work, "home")], check=True)
    cluster = Cluster(work)
    counts = {"run": 0, "marked": 0, "compared": 0, "shown": 0}
    failures = []
    try:
        cluster.init()
        for f, blocks in docs:
            if f != readme:
                cluster.restore()
            ran = marked = shown = 0
            for b in blocks:
                if b.lang not in RUN + SHOWN:
                    failures.append(b.where())
                    print(f"FAILED  {b.where()}: a block in \"{b.lang}\": write sql or sh (run), or one of "
                          f"{', '.join(l for l in SHOWN if l)} (shown)")
                    continue
                if b.lang not in RUN:
                    shown += 1
                    continue
                if b.marked:
                    marked += 1
                    print(f"  marked  {b.where()}: {b.marked}")
                    continue
                ok, printed = run_block(cluster, b, clone)
                ran += 1
                counts["compared"] += b.output is not None
                if not ok:
                    failures.append(b.where())
                    print(f"FAILED  {b.where()} ({b.lang}):\n" + "".join("    | " + l + "\n" for l in b.text.rstrip("\n").split("\n")))
                    print("  printed:\n" + "".join("    > " + l + "\n" for l in printed.rstrip("\n").split("\n")))
                    if b.output is not None:
                        print("  shown:\n" + "".join("    < " + l + "\n" for l in b.output.rstrip("\n").split("\n")))
            counts["run"] += ran
            counts["marked"] += marked
            counts["shown"] += shown
            print(f"{os.path.relpath(f, ROOT)}: {ran} blocks run, {marked} marked as illustrations, {shown} shown only")
            if f == readme:
                cluster.save()
    finally:
        try:
            cluster.stop()
        except subprocess.CalledProcessError:
            pass
        subprocess.run(["tail", "-n", "30", os.path.join(work, "server.log")]) if failures else None
        shutil.rmtree(work, ignore_errors=True)
    print(f"docs: {counts['run']} blocks run ({counts['compared']} outputs compared), "
          f"{counts['marked']} marked as illustrations, {counts['shown']} shown only (not sql or sh), "
          f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
