"""What the README and docs command tests share: a reader's folders, an environment that
points the CLI at a daemon of the test's own, that daemon started as `./dev serve --port P`,
and the commands as one bash script with a marker before each (`_split` reads the output
back per command)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from test_chat_exports import chatgpt_conversation

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(sys.prefix)  # the virtual environment running this test
MARK = "@@readme-command "


def reader_folders(base: Path, work_name: str) -> tuple[Path, Path, Path]:
    """(mnemonist home, user home, working folder): the working folder holds the project's
    `.venv` (a link) and the ChatGPT export a reader brings."""
    home, user_home, work = base / "agents", base / "user", base / work_name
    for d in (home, user_home, work):
        d.mkdir()
    (work / ".venv").symlink_to(VENV)
    (work / "conversations.json").write_text(json.dumps([chatgpt_conversation(1, [
        ("user", "Which bakery did you recommend for sourdough?"),
        ("assistant", "The one on Elm Street bakes sourdough every morning.")])]))
    return home, user_home, work


def reader_env(home: Path, user_home: Path, port: int, path: str) -> dict[str, str]:
    """This process's environment without its mnemonist identity and token, the homes in the
    test's folder and the CLI pointed at the test's daemon."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("MNEMONIST_TOKEN", "MNEMONIST_URL", "VIRTUAL_ENV")
           and not k.startswith(("MNEMONIST_AGENT", "MNEMONIST_USER"))}
    env.update(HOME=str(user_home), MNEMONIST_HOME=str(home), PATH=path,
               MNEMONIST_URL=f"http://127.0.0.1:{port}")
    return env


@contextmanager
def dev_serve(env: dict[str, str], port: int) -> Iterator[None]:
    """`./dev serve --port PORT`, until it says it answers; stopped after."""
    daemon = subprocess.Popen([str(ROOT / "dev"), "serve", "--port", str(port)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert daemon.stdout is not None
        line = daemon.stdout.readline()  # printed once the daemon answers
        assert line.startswith(f"mnemonist listening on http://127.0.0.1:{port}"), (
            line, daemon.poll() is not None and daemon.communicate()[1])
        yield
    finally:
        daemon.terminate()
        try:
            daemon.wait(30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait(10)


def run_script(commands: Sequence[str], port: int, work: Path, env: dict[str, str],
               prelude: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """The commands in order in one `set -euo pipefail` bash session, each after a marker
    line on stdout and stderr; `3850` becomes the test daemon's port."""
    script = ["set -euo pipefail", *prelude]
    for i, command in enumerate(commands):
        # on a line of its own: curl's answers end without a newline
        script.append(f"printf '\\n{MARK}{i}\\n'; printf '\\n{MARK}{i}\\n' >&2")
        script.append(command.replace("3850", str(port)))
    return subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, env=env,
                          capture_output=True, text=True, timeout=600)
