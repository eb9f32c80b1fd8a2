"""Strands Agents SDK trees under the service's guarantees: ``StrandsTree`` implements the runtime's seam.

An agent factory may return the root ``strands.Agent`` of a tree (sub-agents as ``agent.as_tool()``);
the service wraps it in a ``StrandsTree`` with the run's session, or the factory returns one itself
to give it an approval policy. Everything is done through Strands' public API, on every agent of the
tree, by one hook provider each:

- every model call and every tool call is a step boundary: the run's ``stop`` looks at the lease
  (renewing it once a quarter has passed) and reads a cancel (a cancel stops the whole tree; a lost
  lease stops it and is raised, so nothing of the run is committed);
- a tool call that needs approval (the tree's ``ApprovalPolicy``, then the deployment's default) asks
  a person through a Strands interrupt named ``approval`` whose reason is the display detail the
  service shows; a denial cancels the call, an edit replaces its input (checked against its schema);
  an approved call runs through the service's action journal (``selected_tool`` replaced by a
  journaled one), so it runs once however many processes resume the turn;
- the turn's time budget pauses the turn before a tool call with a checkpoint interrupt;
- a sub-agent call (``as_tool``) is a child turn; its interrupts reach the root namespaced by Strands
  (``v1:agent_as_tool:<toolUseId>:...``, read by ``call_prefix`` like ours);
- the state is the root's Strands snapshot (which holds the interrupted turns of ``preserve_context
  =False`` sub-agents), stored by the service on S3; a ``preserve_context=True`` sub-agent keeps its
  own snapshot in the run's session (also on S3, committed with the turn).

Configurations that would weaken a guarantee are refused when the tree is built, saying why, and so is
a tool call whose toolUseId an earlier reply of the same agent used (see ``refusal``).

One module per concept: ``tree`` (``StrandsTree``: the seam), ``run`` (one ``invoke``'s stop signal
and where each agent's call runs in the tree), ``hooks`` (the hook provider on every agent: step
boundaries, approvals and edits, checkpoints, child turns), ``journal`` (an approved call run through
the action journal; ``fencing_token``), ``snapshot`` (the tree's snapshot, a sub-agent's stored state,
a paused turn dismissed), ``refusal`` (what is refused, and why) and ``model`` (``ScriptedStrandsModel``,
offline). The Strands SDK is imported when this package is, never by ``import resumable``.
"""

from __future__ import annotations

try:
    import strands  # noqa: F401  (the SDK's absence is said here, once, for every module of the package)
except ImportError as error:  # pragma: no cover - the extra is installed wherever this is imported
    raise ImportError(
        "resumable.integrations.strands needs the Strands Agents SDK: install resumable[strands] "
        "(strands-agents==1.62.0, the version it is tested with)"
    ) from error

from resumable.integrations.strands.journal import fencing_token
from resumable.integrations.strands.model import ScriptedStrandsModel
from resumable.integrations.strands.tree import StrandsTree

TESTED_VERSION = "1.62.0"

__all__ = ["TESTED_VERSION", "ScriptedStrandsModel", "StrandsTree", "fencing_token"]
