"""Functions run from their built layers, as Lambda runs them: each invocation in an execution
environment of the function's own, a process whose path holds the function's code, its layers as
``make layer --local`` builds them for this machine, and the runtime's packages (boto3 and what it
needs), and nothing else: none of the project's virtual environment. So a module an application
imports but its requirements.txt lacks fails here, as it would in Lambda, not at the first invocation
there.

An environment imports its handler once (the init) and runs one invocation at a time; invocations at
once get environments of their own, made as they are needed and kept for the next, as Lambda's are. An
invocation that runs past the function's ``Timeout`` is stopped, its environment with it ("Task timed
out"). The functions' AWS calls reach the embedded AWS over loopback (``AWS_ENDPOINT_URL``), which
answers their ``lambda:Invoke`` of a template function by running that function here too
(resumable.local.template).

While ``serving_from_layers(layout)`` is active, a handler ``resumable.local.functions.load_handler``
loads hands each invocation to this module instead of calling the handler in this process.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from resumable.local.functions import ROOT, RUNNERS, Function, load_template

BOOTSTRAP = Path(__file__).with_name("lambda_bootstrap.py")
RUNTIME = "runtime"


class FunctionError(Exception):
    """An invocation that failed as Lambda reports it: its ``error_type`` (the exception's class, or the
    runtime's own: ``Runtime.ImportModuleError``, ``Sandbox.Timedout``) and message."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type


@dataclass(frozen=True)
class Layout:
    """The built layers' python/ folders by their logical ids (``runtime``: the runtime's packages)."""

    layers: dict[str, Path]

    def path(self, function: Function, template: dict[str, Any]) -> list[str]:
        """What ``function``'s environment has on its path, in order: its code, the layers the template
        gives it that this layout holds, and the runtime's packages."""
        named = _names(template.get("Globals", {}).get("Function", {}).get("Layers", []))
        named += _names(template["Resources"][function.name]["Properties"].get("Layers", []))
        layers = [str(self.layers[name]) for name in dict.fromkeys(named) if name in self.layers]
        return [str(ROOT / function.code_uri), *layers, str(self.layers[RUNTIME])]


def builds_agents(function: Function, template: dict[str, Any]) -> bool:
    """Whether ``function`` builds agents: the template gives it the app layer (when there is an application)."""
    return "AppLayer" in _names(template["Resources"][function.name]["Properties"].get("Layers", []))


def _names(value: Any) -> list[str]:
    """The names a template's ``Layers`` mentions (its intrinsics read as plain values: ``!If [UseApp,
    !Ref AppLayer, ...]`` reads as a list of names)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [name for item in value for name in _names(item)]
    return []


def _seconds(template: dict[str, Any], function: Function, setting: str, default: int) -> int:
    own = template["Resources"][function.name]["Properties"].get(setting)
    return int(own or template.get("Globals", {}).get("Function", {}).get(setting, default))


@dataclass
class ExecutionEnvironment:
    """One process that imported ``function``'s handler and runs its invocations, one at a time."""

    function: Function
    path: list[str]
    timeout: int
    memory: int
    process: subprocess.Popen[bytes] = field(init=False)
    _invocations: IO[str] = field(init=False)
    _replies: IO[str] = field(init=False)

    def __post_init__(self) -> None:
        to_it, invocations = os.pipe()
        replies, from_it = os.pipe()
        environment = {**os.environ, "AWS_LAMBDA_FUNCTION_NAME": self.function.name}
        environment |= {"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(self.memory)}
        command = [sys.executable, "-I", "-S", str(BOOTSTRAP), json.dumps(self.path), self.function.handler]
        self.process = subprocess.Popen(
            [*command, str(to_it), str(from_it)], pass_fds=(to_it, from_it), env=environment, cwd=self.path[0]
        )
        os.close(to_it)
        os.close(from_it)
        self._invocations = os.fdopen(invocations, "w", encoding="utf-8")
        self._replies = os.fdopen(replies, "r", encoding="utf-8")

    def invoke(self, event: Any, context: Any) -> Any:
        """Run one invocation: its result, or ``FunctionError`` as Lambda reports a failed one."""
        fields = {
            "function_name": self.function.name,
            "invoked_function_arn": getattr(context, "invoked_function_arn", self.function.name),
            "memory_limit_in_mb": self.memory,
            "aws_request_id": getattr(context, "aws_request_id", "local"),
            "deadline": time.time() + self.timeout,
        }
        # Sent from a thread of its own: a large event fills the pipe until the process reads it, and a
        # process whose init hangs never does (the timeout below stops it, and with it the write).
        sent: list[BaseException] = []
        sender = threading.Thread(target=self._send, args=({"event": event, "context": fields}, sent), daemon=True)
        sender.start()
        ready, _, _ = select.select([self._replies], [], [], self.timeout)
        if not ready:
            self.stop()
            sender.join()
            raise FunctionError("Sandbox.Timedout", f"Task timed out after {self.timeout:.2f} seconds")
        line = self._replies.readline()
        sender.join()
        if not line or sent:
            raise self._ended()
        reply = json.loads(line)
        if "error" in reply:
            raise FunctionError(reply["error"]["errorType"], reply["error"]["errorMessage"])
        return reply["result"]

    def _send(self, invocation: dict[str, Any], failed: list[BaseException]) -> None:
        try:
            self._invocations.write(json.dumps(invocation) + "\n")
            self._invocations.flush()
        except (BrokenPipeError, ValueError, OSError) as error:  # (it exited, or was stopped)
            failed.append(error)

    def _ended(self) -> FunctionError:
        code = self.process.wait()
        return FunctionError("Runtime.ExitError", f"RequestId: the function's process exited ({code}) mid-invocation")

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        """The process killed first (a write to it blocked on a full pipe then fails, and lets go of the
        pipe), then its pipes closed."""
        if self.alive:
            self.process.kill()
        self.process.wait()
        for pipe in (self._invocations, self._replies):
            with contextlib.suppress(OSError, ValueError):
                pipe.close()


class ExecutionEnvironments:
    """Each template function's environments: one taken for each invocation (a new one when all are
    busy), kept afterwards for the next."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.template = load_template()
        self._lock = threading.Lock()
        self._idle: dict[str, list[ExecutionEnvironment]] = {}
        self._made: list[ExecutionEnvironment] = []

    def handler(self, function: Function) -> Callable[[Any, Any], Any]:
        """What runs ``function``'s invocations in its environments."""
        return lambda event, context: self.invoke(function, event, context)

    def invoke(self, function: Function, event: Any, context: Any) -> Any:
        environment = self._take(function)
        try:
            return environment.invoke(event, context)
        finally:
            with self._lock:
                if environment.alive:
                    self._idle.setdefault(function.name, []).append(environment)
                elif environment in self._made:  # (it exited or timed out: its pipes closed, forgotten)
                    self._made.remove(environment)
            if not environment.alive:
                environment.stop()

    def _take(self, function: Function) -> ExecutionEnvironment:
        with self._lock:
            idle = self._idle.setdefault(function.name, [])
            while idle:
                found = idle.pop()
                if found.alive:
                    return found
        made = ExecutionEnvironment(
            function,
            self.layout.path(function, self.template),
            timeout=_seconds(self.template, function, "Timeout", 3),
            memory=_seconds(self.template, function, "MemorySize", 128),
        )
        with self._lock:
            self._made.append(made)
        return made

    def stop(self) -> None:
        """Stop every environment made (the local run's end)."""
        with self._lock:
            made, self._made, self._idle = self._made, [], {}
        for environment in made:
            environment.stop()


@contextlib.contextmanager
def serving_from_layers(layout: Layout) -> Iterator[ExecutionEnvironments]:
    """Run every template function from ``layout`` (handlers loaded within), until the block ends."""
    environments = ExecutionEnvironments(layout)
    RUNNERS.append(environments.handler)
    try:
        yield environments
    finally:
        RUNNERS.remove(environments.handler)
        environments.stop()
