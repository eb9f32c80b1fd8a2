"""``make new-agent [NAME=my_agent]``: start the application's own agents in app/, from tools/agent_template/:
a package with the agent factory (one tool that needs a person's approval, one that does not, an
offline stand-in for the model), its requirements (one small third-party package, to show how one
comes along) and a test of the factory, green from the start. It sets ``AgentFactory`` in
samconfig.toml's deploy parameters, which make run, make predeploy and make deploy read.

It writes nothing where app/ exists already, and refuses a name that is not a Python package name or
that a layer or the runtime already ships (it would hide that package in /opt/python).
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
import shutil
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = Path(__file__).resolve().parent / "agent_template"
PLACEHOLDER = "my_agent"


class NotWrittenError(Exception):
    pass


def new_agent(root: Path, name: str) -> str:
    """Write ``root``/app from the template with its package named ``name``; the agent factory it names.
    samconfig.toml is edited first and the app written after: where either cannot be, nothing is."""
    _check(name)
    app = root / "app"
    if app.exists():
        raise NotWrittenError(f"{app} exists already: nothing was written. Edit it, or move it away to start again")
    factory = f"{name}.agents:build_agents"
    set_parameter(root / "samconfig.toml", "AgentFactory", factory)
    shutil.copytree(TEMPLATE, app, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (app / PLACEHOLDER).rename(app / name)
    for path in sorted(app.rglob("*")):
        if path.is_file():
            path.write_text(re.sub(rf"\b{PLACEHOLDER}\b", name, path.read_text()))
    return factory


# What the package may not be called: what the layers, the runtime and the template's own requirements
# install, and the folders app/ or a project holds.
_TAKEN = {"resumable", "strands", "dateutil", "yaml", "jwt", "app", "tests", "test", "functions", "layers", "tools"}


def _check(name: str) -> None:
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,62}", name) or keyword.iskeyword(name):
        raise NotWrittenError(
            f"{name!r} is not a package name: use up to 63 lowercase ASCII letters, digits and _, a letter first "
            "(orders, claims_desk); nothing was written"
        )
    sys.path.insert(0, str(ROOT))
    from layers.provided import pins, provided

    shipped = {p.replace("-", "_") for p in provided(strands=True)} | _TAKEN
    shipped |= {p.replace("-", "_") for p in pins(TEMPLATE / "requirements.txt")}
    if name in shipped or name in sys.stdlib_module_names:
        raise NotWrittenError(
            f"{name!r} is the name of a package a layer, the runtime, Python or the template already has: pick "
            "another name; nothing was written"
        )


_SECTION = "[default.deploy.parameters]"


def set_parameter(samconfig: Path, name: str, value: str) -> None:
    """``name=value`` in samconfig.toml's deploy ``parameter_overrides`` (added, or put in place of the old
    value), the rest of the file as it was. ``NotWrittenError``, the file untouched, where the result would
    not read back as the same overrides with this one set (a layout this edit does not know)."""
    sys.path.insert(0, str(ROOT))
    from layers.build import stack_parameters

    text = samconfig.read_text() if samconfig.exists() else "version = 0.1\n"
    try:
        tomllib.loads(text)
        before = stack_parameters(samconfig) if samconfig.exists() else {}
    except (tomllib.TOMLDecodeError, ValueError) as error:
        raise NotWrittenError(f"{samconfig} cannot be read ({error}): nothing was written") from None
    lines = text.splitlines()
    headers = [line.split("#", 1)[0].strip() for line in lines]
    if _SECTION not in headers:
        lines += ["", _SECTION]
        headers += ["", _SECTION]
    start = headers.index(_SECTION)
    end = next((n for n in range(start + 1, len(lines)) if headers[n].startswith("[")), len(lines))
    found = next((n for n in range(start + 1, end) if lines[n].split("=", 1)[0].strip() == "parameter_overrides"), None)
    parameters = {**before, name: value}
    written = " ".join(f"{key}={_quoted(said)}" for key, said in parameters.items())
    line = "parameter_overrides = " + json.dumps(written)  # (a JSON string is a TOML basic string)
    if found is None:
        while end > start + 1 and not lines[end - 1].strip():
            end -= 1
        lines.insert(end, line)
    else:
        lines[found] = line
    edited = "\n".join(lines) + "\n"
    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / "samconfig.toml").write_text(edited)
        try:
            tomllib.loads(edited)
            read_back = stack_parameters(Path(scratch) / "samconfig.toml")
        except (tomllib.TOMLDecodeError, ValueError):
            read_back = {}
    if read_back != parameters:
        raise NotWrittenError(
            f"{samconfig} is laid out in a way this edit does not know (its parameter_overrides over several "
            f"lines, say): nothing was written. Add {name}={value} to parameter_overrides under {_SECTION} "
            "yourself, then run make new-agent again"
        )
    samconfig.write_text(edited)


def _quoted(value: str) -> str:
    """A value as SAM reads one in parameter_overrides: bare, or double-quoted with \\ and \" escaped."""
    if value and not re.search(r'[\s"\\]', value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", default=PLACEHOLDER, help="the package's name (default: my_agent)")
    parser.add_argument("--into", type=Path, default=ROOT, help="the project (default: this one)")
    args = parser.parse_args(argv)
    try:
        factory = new_agent(args.into, args.name)
    except NotWrittenError as refused:
        print(f"make new-agent: {refused}", file=sys.stderr)
        return 1
    app = "app"
    print(
        f"made {app}/: your agents ({app}/{args.name}/agents.py), their test ({app}/tests/test_agents.py) and "
        f"their requirements ({app}/requirements.txt)\n"
        f"set AgentFactory={factory} in samconfig.toml (make run, make predeploy and make deploy read it)\n"
        "next:\n"
        "  make test-app    # its test, against the app layer built for this machine\n"
        "  make run         # your agents on the local API, each function run from its layers as in Lambda\n"
        "  docs/your-agent.md: settings, secrets, models, then make predeploy and make deploy"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
