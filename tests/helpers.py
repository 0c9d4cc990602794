"""Helpers the test files share: `zoo` as a user runs it, in this process or as a command."""
import subprocess
import sys
from pathlib import Path

from zoo.cli import main

REPO = Path(__file__).resolve().parents[1]


def run(*argv, capsys):
    """`zoo ARGV` in this process: (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def zoo(*args, cwd=None, timeout=300, **kw) -> subprocess.CompletedProcess:
    """`zoo ARGS` as a command of its own (`python -m zoo.cli`), for what only a new process shows."""
    return subprocess.run([sys.executable, "-m", "zoo.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, **kw)


def spec(folder: Path, text: str, name: str = "s.yaml") -> Path:
    """A spec file written from `text`."""
    f = folder / name
    f.write_text(text)
    return f


def refused(code, out, err, *fragments) -> str:
    """Exit 2, no traceback, and each fragment in the message."""
    msg = (out + err).strip()
    assert code == 2 and "Traceback" not in msg, msg
    for f in fragments:
        assert f in msg, (f, msg)
    return msg


def exit_2(code, out, err, *fragments):
    """Exit 2 with one `zoo: error:` paragraph, no traceback, and each fragment in it."""
    assert code == 2, (code, out, err)
    assert "Traceback" not in out + err and "zoo: error:" in err, err
    for f in fragments:
        assert f in err, (f, err)


def fails_at(tmp_path, capsys, text: str, line: int, field: str, *more, command="validate", fragment=""):
    """`zoo COMMAND` on a spec of `text` fails (exit 2, no traceback) at `line` naming `field`."""
    f = spec(tmp_path, text)
    code, out, err = run(command, f, *more, capsys=capsys)
    msg = (out + err).strip()
    assert code == 2 and "Traceback" not in msg, msg
    assert f"{f}:{line}: {field}: " in msg, msg
    assert fragment in msg, msg
    return msg


def ran(*argv, capsys) -> subprocess.CompletedProcess:
    """`zoo ARGV` in this process, shaped as a finished command: returncode, stdout, stderr."""
    code, out, err = run(*argv, capsys=capsys)
    return subprocess.CompletedProcess(["zoo", *map(str, argv)], code, out, err)
