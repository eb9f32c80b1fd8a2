"""``make validate``: cfn-lint on template.yaml, then an offline SAM translation of it.

The translation is what ``sam deploy`` asks CloudFormation to do, done here with no AWS account:
local CodeUri/ContentUri/DefinitionUri paths (which ``sam build``/``sam package`` turn into S3 objects) are
replaced by placeholder S3 URIs, and no managed policies are looked up (SAM names the ones it attaches).
CloudFormation runs ``AWS::LanguageExtensions`` first, which resolves every ``Fn::If`` whose condition
rests on parameters alone; that is done here too, in four configurations that between them take each
of the template's conditions both ways (checked): every option off (``AuthMode=IAM``); sign-in
(``AuthMode=JWT``) with the optional Strands layer; an application's agents (the app layer, its
settings, secrets and models) without it; and every optional hardening parameter (a customer-managed
key, a VPC, access logs, alarm and notify emails, a concurrency limit) with the Slack function and
decision links. (Six configurations before: JWT alone and hardened without Slack are no longer linted
apart; a nested ``Fn::If`` is linted only in the combinations these make.)
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from resumable.local.permissions.configurations import APP, AUTH_MODES, HARDENED, SAMPLE, SLACK, STRANDS
from resumable.local.permissions.stack import conditions, read_template, translate

TEMPLATE = Path(__file__).resolve().parents[1] / "template.yaml"
TRANSLATIONS: dict[str, dict[str, object]] = {
    "AuthMode=IAM, every option off": AUTH_MODES["IAM"],
    "AuthMode=JWT, with Strands and the sample durable workflow": {**AUTH_MODES["JWT"], **STRANDS, **SAMPLE},
    "AuthMode=IAM, with an application's agents": APP,
    "AuthMode=IAM, hardened, with Slack and decision links": {**HARDENED, **SLACK},
}


def _conditions_taken_one_way(template: str) -> list[str]:
    """The template's conditions that no translation takes true, or none takes false (or whose truth
    rests on more than parameters, which no translation can tell)."""
    taken = [conditions(read_template(template), parameters) for parameters in TRANSLATIONS.values()]
    return sorted(name for name in taken[0] if {t[name] for t in taken} != {True, False})


def check_state_machine() -> int:
    """Parse the state machine (substitutions resolved) as Step Functions' interpreter does, and check
    that every transition names a state. Returns how many states it has."""
    from resumable.local import moto_imports

    moto_imports.apply()  # (the parser would import all of moto's EC2)
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    from resumable.config import Settings
    from resumable.local.template import state_machine_definition

    text = state_machine_definition(Settings())
    AmazonStateLanguageParser.parse(text)
    definition = json.loads(text)
    if definition.get("QueryLanguage", "JSONPath") != "JSONPath":
        raise ValueError("the state machine must use JSONPath")
    states = definition["States"]
    targets = [definition["StartAt"]]
    for state in states.values():
        targets += [state.get("Next"), state.get("Default")]
        targets += [c.get("Next") for c in state.get("Choices", []) + state.get("Catch", [])]
    missing = sorted({t for t in targets if t is not None and t not in states})
    if missing:
        raise ValueError(f"the state machine moves to states it does not have: {missing}")
    return len(states)


def main() -> int:
    template = TEMPLATE.read_text()
    one_way = _conditions_taken_one_way(template)  # (first: it takes milliseconds, cfn-lint seconds)
    if one_way:
        print(
            f"validate: the translations take these conditions one way only, or cannot tell (one resting on more "
            f"than parameters): {one_way}; add a configuration to TRANSLATIONS in tools/validate_template.py"
        )
        return 1
    lint = subprocess.run([str(Path(sys.executable).parent / "cfn-lint"), str(TEMPLATE)], check=False)
    if lint.returncode != 0:
        print(f"cfn-lint found problems in {TEMPLATE.name} (exit {lint.returncode})")
        return lint.returncode
    with tempfile.TemporaryDirectory() as scratch:
        written = []
        for configuration, parameters in TRANSLATIONS.items():
            translated = translate(read_template(template), parameters)
            written.append(Path(scratch) / f"{len(written)}.json")
            written[-1].write_text(json.dumps(translated))
            kinds = sorted({r["Type"] for r in translated["Resources"].values()})
            print(f"SAM translation ({configuration}): {len(translated['Resources'])} resources ({', '.join(kinds)})")
        # What CloudFormation is asked to create, in each configuration: its errors (a circular
        # dependency SAM's routes make, say; warnings there are the translation's, not the template's).
        lint = subprocess.run(
            [str(Path(sys.executable).parent / "cfn-lint"), "--ignore-checks", "W", "I", "--", *map(str, written)],
            check=False,
        )
        if lint.returncode != 0:
            said = f"exit {lint.returncode}; the translations above, in order"
            print(f"cfn-lint found errors in a translation of {TEMPLATE.name} ({said})")
            return lint.returncode
    print(f"cfn-lint: clean, and clean of errors in each of the {len(TRANSLATIONS)} translations")
    print(f"state machine: {check_state_machine()} states, parsed as Step Functions would, every transition known")
    return 0


if __name__ == "__main__":
    sys.exit(main())
