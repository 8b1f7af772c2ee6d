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
import os
import re
import sys
from pathlib import Path

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


def render_config(processes: dict[str, str], folder: Path) -> str:
    """A supervisord configuration: each process through ``sh -c 'exec ...'`` (so ``${PORT}`` expands and
    the signal reaches the process itself), restarted whenever it exits, stopped with its process group.

    All processes are stopped together; one still running 20 s after SIGTERM (a worker finishing a long
    task in its warm shutdown) is killed: its unacknowledged task goes back to the queue (acks_late)."""
    sections = [
        "[unix_http_server]",
        f"file={folder / 'supervisor.sock'}",
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
        f"serverurl=unix://{folder / 'supervisor.sock'}",
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


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["ctl"]:
        conf = supervisor_dir() / "supervisord.conf"
        os.execv(
            sys.executable, [sys.executable, "-m", "supervisor.supervisorctl", "-c", str(conf), *args[1:]]
        )
    parser = argparse.ArgumentParser(prog="python -m planner.supervise", description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these Procfile processes")
    options = parser.parse_args(args)
    conf = write_config(options.only)
    os.execv(sys.executable, [sys.executable, "-m", "supervisor.supervisord", "-n", "-c", str(conf)])


if __name__ == "__main__":
    sys.exit(main())
