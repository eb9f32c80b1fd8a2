"""The application's agents on this machine: the project's app/ folder (``make new-agent`` makes it), its
agent factory, and its functions' layers built for this machine, from which make run serves it.

The factory is ``AGENT_FACTORY`` where it is set, else the ``AgentFactory`` samconfig.toml's deploy
parameters give (what make deploy deploys); the Strands layer comes too where ``StrandsAgents`` is
``true`` there (or in ``STRANDS_AGENTS``). ``AGENT_FACTORY`` naming the demo's factory serves the demo,
as where there is no app/.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from resumable.local.execution import Layout
from resumable.local.functions import ROOT

APP = ROOT / "app"
# Where make run builds the layers for this machine (git ignores .resumable/).
BUILT = ROOT / ".resumable" / "lambda"
DEMO = "resumable.demo_agents:build_demo_agents"


def layers_build(module: str = "build") -> ModuleType:
    """layers/build.py, the layers' build, or another module of layers/ (beside the package)."""
    if str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))
    return importlib.import_module(f"layers.{module}")


@dataclass(frozen=True)
class Application:
    """app/ and how it is deployed: its agent factory (``from_``: where that was read) and Strands."""

    folder: Path
    factory: str
    from_: str
    strands: bool

    def build(self, into: Path = BUILT) -> Layout:
        """Its functions' layers and the runtime's packages, built for this machine; one line said of
        them on stdout."""
        began = time.monotonic()
        print(f"make run: building the layers for this machine ({shown(into)}; the first time takes a minute)...")
        built = layers_build().build_local(into, self.folder, strands=self.strands)
        sizes = ", ".join(f"{name} {layers_build().size(path) / (1 << 20):.1f} MiB" for name, path in built.items())
        print(f"make run: built in {time.monotonic() - began:.0f} s: {sizes}", flush=True)
        return Layout(built)


def application(
    environment: Mapping[str, str] | None = None, folder: Path = APP, samconfig: Path = ROOT / "samconfig.toml"
) -> Application | None:
    """The project's application, if it has an app/ folder; SystemExit, saying what to set, where it
    has one and no agent factory of its own is named."""
    environment = os.environ if environment is None else environment
    if not folder.is_dir():
        return None
    parameters = layers_build().stack_parameters(samconfig)
    factory, from_ = environment.get("AGENT_FACTORY"), "AGENT_FACTORY"
    if factory == DEMO:
        return None  # (the demo's agents, asked for by name: served in this process, app/ aside)
    if not factory:
        factory, from_ = parameters.get("AgentFactory"), "samconfig.toml's AgentFactory"
    if not factory or factory == DEMO:
        raise SystemExit(
            f"make run: there is an app/ folder, and no agent factory of its own is named (AgentFactory in "
            f"samconfig.toml's parameter_overrides is {factory or 'unset'}). Set it there (make new-agent does), "
            "or run with AGENT_FACTORY=package.module:function; nothing was started"
        )
    strands = environment.get("STRANDS_AGENTS", parameters.get("StrandsAgents", "false")).lower() == "true"
    return Application(folder, factory, from_, strands)


def shown(path: Path) -> str:
    """A path as the project's (relative to its root) where it is in it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
