"""recover: move a turn that a failure left behind to where it should be."""

from __future__ import annotations

from typing import TYPE_CHECKING

from resumable.service.access import load
from resumable.service.advancing.advance import advance
from resumable.service.advancing.workflow import tell_workflow
from resumable.service.views import TurnView

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies


def recover(deps: Dependencies, session_id: str, turn_id: str) -> TurnView:
    """Safe to call at any time, any number of times:

    - a waiting turn past an interaction's expiry is settled ``expired``, and one whose cancel died
      before it settled the tree is settled ``canceled``;
    - a waiting turn with every interaction answered (the invocation that should have resumed it
      failed, or its snapshot could not be loaded) is resumed with the recorded answers;
    - a running turn whose lease expired is taken over and re-run from its last committed snapshot
      with the recorded answers (or, if canceling, settled ``interrupted``); a checkpointed one
      (running, unleased) is continued (or, if canceling, settled ``canceled``);
    - a settled turn that a workflow waits on is told to it again (the workflow may not have heard);
    - anything else is left alone.

    Approved actions go through the action journal, so none runs twice.
    """
    tree = load(deps, session_id, turn_id)
    if tree.root.settled:
        tell_workflow(deps, tree)  # in case the invocation that settled it could not
        return TurnView.of(tree, turn_id)
    return TurnView.of(advance(deps, tree), turn_id)
