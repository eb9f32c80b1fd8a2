"""What moto 5.2.5 parses again and again and the embedded AWS parses once: update expressions (and
their clauses' check), condition and filter expressions, EventBridge's JSONPaths; and the copy of an
update expression's tree through pickle. Each gives the same result as moto's own code (what does
not parse is refused every time, as before). Likewise on the clients' side, what botocore works out
again for every request: the parts of its User-Agent header, each sanitized a character at a time.
``moto_patches.apply`` applies them (in the processes that run an embedded AWS, never in Lambda)."""

from __future__ import annotations

import functools
import json
import pickle
from typing import Any


def apply() -> None:
    _copy_update_expressions_through_pickle()
    _parse_each_update_expression_once()
    _check_an_update_expressions_clauses_once()
    _parse_each_json_path_once()
    _parse_each_condition_expression_once()
    _list_a_validators_node_kinds_once()
    _sanitize_each_user_agent_part_once()


def _sanitize_each_user_agent_part_once() -> None:
    """botocore builds every request's User-Agent header twice (as it makes the request, and again once
    the request's features are known), sanitizing each of its twenty-odd parts a character at a time
    through a generator: about a tenth of a call to the embedded AWS in this process. The parts are the
    same few strings (the SDK's version, the OS, the language, the features' letters), and sanitizing is
    a function of the string alone: each distinct part is sanitized once, to the same header."""
    from botocore import useragent

    if getattr(useragent.sanitize_user_agent_string_component, "sanitizes_once", False):
        return
    sanitized = functools.lru_cache(maxsize=4096)(useragent.sanitize_user_agent_string_component)

    def sanitize_user_agent_string_component(raw_str: str, allow_hash: bool) -> str:
        return sanitized(raw_str, allow_hash)

    botocores = useragent.sanitize_user_agent_string_component
    sanitize_user_agent_string_component.sanitizes_once = True  # type: ignore[attr-defined]
    sanitize_user_agent_string_component.botocores = botocores  # type: ignore[attr-defined]
    useragent.sanitize_user_agent_string_component = sanitize_user_agent_string_component


def _parse_each_update_expression_once() -> None:
    """moto parses an UpdateExpression on every UpdateItem (a tokenizer and a parser in Python: a
    tenth of a 30-attribute update's time), though the same few expressions come again and again. The
    tree it makes is never changed: each validation works on a deep copy of it. So one parse per
    distinct expression serves every update that sends it (an expression that does not parse is
    refused every time, as before)."""
    import functools

    from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]

    if getattr(UpdateExpressionParser.make, "parses_once", False):
        return
    parse = functools.lru_cache(maxsize=1024)(UpdateExpressionParser.make)

    def make(cls: Any, expression: str) -> Any:
        return parse(expression)

    make.parses_once = True  # type: ignore[attr-defined]
    UpdateExpressionParser.make = classmethod(make)


def _check_an_update_expressions_clauses_once() -> None:
    """Two of moto's checks of an UpdateExpression (no clause twice, no two actions on overlapping
    paths) run at every nested expression node, each walking all of the actions under it: quadratic
    in the number of actions (a 30-attribute SET spent a third of its time there). The top node holds
    every action, so checking it alone finds every clause given twice and every overlap."""
    from moto.dynamodb.parsing.ast_nodes import UpdateExpression  # type: ignore[attr-defined]
    from moto.dynamodb.parsing.validators import ActionCountValidator, OverlappingPathsValidator

    def at_the_top(self: Any, node: Any) -> Any:
        return self.process(node) if isinstance(node, UpdateExpression) else node

    ActionCountValidator.traverse = at_the_top
    OverlappingPathsValidator.traverse = at_the_top


def _parse_each_json_path_once() -> None:
    """moto builds a JSONPath parser (a PLY grammar, tables and all) for each of eight input paths of
    every target of every event put on a bus: 7 ms an event, most of a ``PutEvents``. A parsed path is
    never changed (``find`` only reads it), so one parse per distinct path serves every event (a path
    that does not parse is refused every time, as before). moto imports ``parse`` where it uses it."""
    import jsonpath_ng.ext

    ext: Any = jsonpath_ng.ext  # (its parse is not among its declared exports)
    if getattr(ext.parse, "parses_once", False):
        return
    parse = functools.lru_cache(maxsize=1024)(ext.parse)

    @functools.wraps(ext.parse)
    def cached(path: str, *args: Any, **kwargs: Any) -> Any:
        return parse(path, *args, **kwargs)

    cached.parses_once = True  # type: ignore[attr-defined]
    ext.parse = cached


def _parse_each_condition_expression_once() -> None:
    """moto parses a condition or filter expression (a lexer and a parser in Python) every time it meets
    one (each UpdateItem, PutItem, DeleteItem and Query, twice for each item of a transaction): a quarter
    of a 100-item transaction's time. The tree it
    makes is never changed (each node's ``expr`` only reads the item), so one parse per distinct
    expression, names and values serves every write that sends them (the publisher's marks send the
    same ones item after item; an expression that does not parse raises every time, as before).
    moto's modules import ``get_filter_expression`` by name: each is given it."""
    from moto.dynamodb import comparisons, models
    from moto.dynamodb.models import table

    if getattr(comparisons.get_filter_expression, "parses_once", False):
        return
    real = comparisons.get_filter_expression

    @functools.lru_cache(maxsize=4096)
    def parse(expr: str | None, names: str, values: str) -> Any:
        return real(expr, json.loads(names), json.loads(values))

    @functools.wraps(real)
    def get_filter_expression(expr: str | None, names: Any, values: Any) -> Any:
        return parse(expr, json.dumps(names, sort_keys=True), json.dumps(values, sort_keys=True))

    class _Parsed:
        """What ``create_condition_expression_parser`` makes (UpdateItem's way in): its ``parse`` is the one."""

        def __init__(self, expr: str | None, names: Any, values: Any) -> None:
            self.parse = functools.partial(get_filter_expression, expr, names, values)

    get_filter_expression.parses_once = True  # type: ignore[attr-defined]
    for module in (comparisons, models, table):
        module.get_filter_expression = get_filter_expression  # type: ignore[attr-defined]
    models.create_condition_expression_parser = _Parsed  # type: ignore[attr-defined,assignment]


def copied(value: Any) -> Any:
    """A deep copy of an update expression's tree or of an attribute value through pickle: the same
    copy as ``copy.deepcopy`` makes of them (plain objects, no copy hooks of their own but
    DynamoType's, which copies the same), in about a quarter of its time."""
    return pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))


def _copy_update_expressions_through_pickle() -> None:
    """moto deep-copies an update expression's tree before validating it (a 30-attribute update: 1.7
    ms of deepcopy, 0.4 ms through pickle). Its items keep moto's own copy, which skips the size check
    that unpickling a LimitedSizeDict would run on every attribute."""
    from moto.dynamodb.parsing import validators

    validators.deepcopy = copied  # type: ignore[attr-defined,assignment]


def _list_a_validators_node_kinds_once() -> None:
    """Each of the ten validators moto runs over an UpdateExpression's tree asks, at every node, which
    kinds of node it processes, and builds the answer again (a dict of its methods, then a tuple of its
    keys). The kinds are classes, the same for the validator's whole life: it builds them once."""
    from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser  # type: ignore[attr-defined]

    if getattr(DepthFirstTraverser.nodes_to_be_processed, "listed_once", False):
        return

    def nodes_to_be_processed(self: Any) -> tuple[type, ...]:
        kinds: tuple[type, ...] | None = self.__dict__.get("_resumable_kinds")
        if kinds is None:
            kinds = self.__dict__["_resumable_kinds"] = tuple(self._processing_map())
        return kinds

    nodes_to_be_processed.listed_once = True  # type: ignore[attr-defined]
    DepthFirstTraverser.nodes_to_be_processed = nodes_to_be_processed
