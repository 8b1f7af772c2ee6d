"""Run the Procfile's processes under supervisord, restarting any that dies (``./dev up``).

honcho (and foreman) stop every process when one exits, so one crashed worker used to take the web server
and beat down with it. supervisord restarts a process that exits, whatever the cause (a crash, ``kill -9``,
the OOM killer), after ``startsecs`` of good health, and keeps trying a process that fails at start up to
``startretries`` times. The Procfile stays the one list of processes; this module turns it into a
supervisord configuration under ``<var>/supervisor/`` (owner-only: its control socket can stop the
processes) and runs supervisord in the foreground, every process's output on its standard output.

    python -m planner.supervise              run web, worker and beat (Ctrl-C or SIGTERM stops all)
    python -m planner.supervise --only worker
    python -m planner.supervise ctl status   supervisorctl against the running supervisord
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from planner.env import env_str

ROOT = Path(__file__).resolve().parent.parent
PROCFILE = ROOT / "Procfile"
LINE = re.compile(r"^(?P<name>[A-Za-z0-9_-]+):\s*(?P<command>.+)$")


def read_procfile(path: Path = PROCFILE) -> dict[str, str]:
    processes: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = LINE.match(line)
        if match is None:
            raise ValueError(f"{path}: not a Procfile line: {raw!r}")
        processes[match["name"]] = match["command"]
    return processes


def supervisor_dir() -> Path:
    return Path(env_str("PLANNER_VAR_DIR") or ROOT / "var").resolve() / "supervisor"


# A Unix socket's path holds at most 107 bytes (103 on macOS); a checkout in a deep folder exceeds that.
SOCKET_PATH_MAX = 100


def control_socket(folder: Path) -> Path:
    """supervisord's control socket: ``<folder>/supervisor.sock``, or, when that path is too long for a Unix
    socket, a socket named after the folder in a folder of this user's alone under the system's temporary
    folder (made 0700 and refused unless it is this user's and no one else's)."""
    natural = folder / "supervisor.sock"
    if len(os.fsencode(natural)) <= SOCKET_PATH_MAX:
        return natural
    short = Path(tempfile.gettempdir()) / f"planner-{os.getuid()}"
    short.mkdir(mode=0o700, exist_ok=True)
    info = short.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise SystemExit(
            f"{short} must be a folder of this user's alone (mode 0700) for supervisord's socket"
        )
    digest = hashlib.sha256(os.fsencode(folder.resolve())).hexdigest()[:16]
    return short / f"supervisor-{digest}.sock"


def render_config(processes: dict[str, str], folder: Path) -> str:
    """A supervisord configuration: each process through ``sh -c 'exec ...'`` (so ``${PORT}`` expands and
    the signal reaches the process itself), restarted whenever it exits, stopped with its process group.

    All processes are stopped together; one still running 20 s after SIGTERM (a worker finishing a long
    task in its warm shutdown) is killed: its unacknowledged task goes back to the queue (acks_late)."""
    sock = control_socket(folder)
    sections = [
        "[unix_http_server]",
        f"file={sock}",
        "chmod=0700",
        "",
        "[supervisord]",
        "nodaemon=true",
        f"logfile={folder / 'supervisord.log'}",
        f"pidfile={folder / 'supervisord.pid'}",
        f"childlogdir={folder}",
        "",
        "[rpcinterface:supervisor]",
        "supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface",
        "",
        "[supervisorctl]",
        f"serverurl=unix://{sock}",
        "",
    ]
    for name, command in processes.items():
        if "'" in command:
            raise ValueError(f"Procfile process {name}: single quotes are not supported")
        sections += [
            f"[program:{name}]",
            f"command=/bin/sh -c 'exec {command}'",
            f"directory={ROOT}",
            "autostart=true",
            "autorestart=true",
            "startsecs=3",
            "startretries=10",
            "stopsignal=TERM",
            "stopwaitsecs=20",
            "stopasgroup=true",
            "killasgroup=true",
            "stdout_logfile=/dev/stdout",
            "stdout_logfile_maxbytes=0",
            "redirect_stderr=true",
            "",
        ]
    return "\n".join(sections)


def write_config(only: list[str] | None = None) -> Path:
    processes = read_procfile()
    if only:
        unknown = sorted(set(only) - set(processes))
        if unknown:
            raise SystemExit(f"not in the Procfile: {', '.join(unknown)} (known: {', '.join(processes)})")
        processes = {name: command for name, command in processes.items() if name in only}
    folder = supervisor_dir()
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    conf = folder / "supervisord.conf"
    conf.write_text(render_config(processes, folder))
    conf.chmod(0o600)
    return conf


def run_in_own_session(command: list[str]) -> int:
    """Run ``command`` (supervisord) in a new session, its output relayed to ours, and stop it with SIGTERM
    when this process gets SIGTERM, SIGINT or SIGHUP.

    Closing the terminal of ``./dev up`` used to kill supervisord before it stopped its processes (the hangup,
    then the write errors of its log lines to a terminal gone), leaving web, worker and beat running. In its own
    session it gets no signal from the terminal; its output comes through a pipe that this process keeps
    draining after the terminal is gone, so supervisord always stops its processes in order."""
    with contextlib.suppress(OSError):  # already a session leader
        os.setsid()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def stop(_signum: int, _frame: Any) -> None:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signal.SIGTERM)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, stop)
    assert child.stdout is not None
    out, terminal = child.stdout.fileno(), sys.stdout.fileno()
    relaying = True
    while chunk := os.read(out, 65536):
        try:
            while relaying and chunk:
                chunk = chunk[os.write(terminal, chunk) :]
        except OSError:  # the terminal is gone: keep draining, so that supervisord never blocks
            relaying = False
    return child.wait()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["ctl"]:
        conf = supervisor_dir() / "supervisord.conf"
        os.execv(
            sys.executable, [sys.executable, "-m", "supervisor.supervisorctl", "-c", str(conf), *args[1:]]
        )
    parser = argparse.ArgumentParser(prog="python -m planner.supervise", description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these Procfile processes")
    parser.add_argument(
        "--own-session",
        action="store_true",
        help="run in a session of its own: the terminal's signals (Ctrl-C, hangup) reach only the caller, "
        "which stops supervisord with SIGTERM (./dev up)",
    )
    options = parser.parse_args(args)
    conf = write_config(options.only)
    command = [sys.executable, "-m", "supervisor.supervisord", "-n", "-c", str(conf)]
    if options.own_session:
        return run_in_own_session(command)
    os.execv(sys.executable, command)


if __name__ == "__main__":
    sys.exit(main())
