"""Your agents and their tools. resumable calls ``build_agents`` on every request to build them afresh
(a Lambda invocation keeps nothing from the last one), so keep no state in the agents: keep it where
the tools write it.

The factory reads a secret (``app_secret``: a Secrets Manager secret named in AppSecretArns; locally,
app/local.json's) and a setting (``app_setting``: an SSM parameter under AppSettingsPath, with a
default). Offline (``MODEL_ID`` unset: make run, make test-app) the agent is driven by ``Rehearsal``, a
stand-in that calls a tool when the prompt names an order; with ``MODEL_ID`` set (the first of the
stack's BedrockModelIds, which grants it) it uses that Bedrock model. Make the tools and the model
yours: docs/your-agent.md says how, and what comes next.
"""

from __future__ import annotations

import os
import re
import threading
from datetime import timedelta
from typing import Any

import humanize

from resumable import Agent, BedrockModel, Model, app_secret, app_setting, tool

# The orders. In memory, so each process has its own: yours live in a system of record, behind its API.
ORDERS: dict[str, dict[str, Any]] = {
    "A-1001": {"customer": "Ada", "amount": 1250.0, "status": "delivered", "age_days": 3},
    "A-1002": {"customer": "Grace", "amount": 89.5, "status": "shipped", "age_days": 1},
    "A-1003": {"customer": "Alan", "amount": 7200.0, "status": "delivered", "age_days": 9},
}
REFUNDS: list[str] = []
_LOCK = threading.Lock()


class OrdersApi:
    """Stands in for your orders system's client, which needs a credential (the app secret
    ``orders-api-token``) and refunds no more than ``refund_limit`` (the app setting ``REFUND_LIMIT``)."""

    def __init__(self, token: str, refund_limit: float) -> None:
        if not token:
            raise ValueError("the orders API needs a token: give the app secret orders-api-token a value")
        self.token, self.refund_limit = token, refund_limit

    def status(self, order_id: str) -> str:
        order = ORDERS.get(order_id)
        if order is None:
            return f"there is no order {order_id}"
        amount = humanize.intcomma(order["amount"], 2)
        placed = humanize.naturaldelta(timedelta(days=order["age_days"]))
        return f"order {order_id}: {order['customer']}, ${amount}, {order['status']}, placed {placed} ago"

    def refund(self, order_id: str) -> str:
        with _LOCK:
            order = ORDERS.get(order_id)
            if order is None:
                return f"there is no order {order_id}"
            if order["status"] == "refunded":
                return f"order {order_id} was refunded already"
            if order["amount"] > self.refund_limit:
                limit = humanize.intcomma(self.refund_limit, 2)
                return f"order {order_id} is over the refund limit of ${limit}: nothing was refunded"
            order["status"] = "refunded"
            REFUNDS.append(order_id)
        return f"refunded ${humanize.intcomma(order['amount'], 2)} to {order['customer']} for order {order_id}"


_ORDER = re.compile(r"\b([A-Z]-\d+)\b")


class Rehearsal:
    """A stand-in for a model, to rehearse offline: a prompt that names an order (A-1001) gets a tool
    call, ``refund_order`` if it asks for a refund and ``order_status`` otherwise, with the reason it
    gives a person; the tool's result is its answer."""

    def converse(
        self, messages: list[dict[str, Any]], system_prompt: str | None, tool_specs: list[dict[str, Any]]
    ) -> dict[str, Any]:
        last = messages[-1]["content"]
        results = [block["toolResult"] for block in last if "toolResult" in block]
        if results:
            said = " ".join(str(c.get("text", c.get("json"))) for result in results for c in result["content"])
            return {"role": "assistant", "content": [{"text": said}]}
        prompt = " ".join(block["text"] for block in last if "text" in block)
        order = _ORDER.search(prompt)
        if order is None:
            return {"role": "assistant", "content": [{"text": "Name an order, e.g. 'refund order A-1001'."}]}
        name = "refund_order" if "refund" in prompt.lower() else "order_status"
        why = f"You asked for a refund of order {order.group(1)}." if name == "refund_order" else "Looking it up."
        use = {"toolUseId": f"{name}-{len(messages)}", "name": name, "input": {"order_id": order.group(1)}}
        return {"role": "assistant", "content": [{"text": why}, {"toolUse": use}]}


def build_agents() -> Agent:
    """The root agent, and its tools over this request's orders API. (Take a
    ``resumable.service.agent_factory.AgentContext`` parameter when you need its session, for sub-agents
    that keep their own context, or its ``enter_context``: docs/service.md.)"""
    api = OrdersApi(app_secret("orders-api-token"), float(app_setting("REFUND_LIMIT", default="5000")))

    @tool
    def order_status(order_id: str) -> str:
        """Look an order up: who placed it, how much it came to, where it is and how long ago it was placed.

        Args:
            order_id: The order's id, such as A-1001.
        """
        return api.status(order_id)

    @tool(approval=True, risk="destructive", impact="Refunds the whole order to the customer's card: the money leaves")
    def refund_order(order_id: str) -> str:
        """Refund an order in full. A person must approve it first.

        Args:
            order_id: The order's id, such as A-1001.
        """
        return api.refund(order_id)

    model_id = os.environ.get("MODEL_ID")
    model: Model = BedrockModel(model_id) if model_id else Rehearsal()
    return Agent(
        name="orders",
        model=model,
        tools=[order_status, refund_order],
        system_prompt="You help with customers' orders. Look an order up before you refund it.",
    )
