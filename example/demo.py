"""The main job: deploy the synthesized example app into the local emulator and show what the
idempotency layer does, scenario by scenario.

    python -m example.demo [cdk.out]     (./dev demo synthesizes first, then runs this)

Exits non-zero if any scenario does not behave as promised.
"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from idempotent_constructs.testing import Deployment, Execution, LocalEmulator

STACK = "IdempotentOrders"
WORKFLOW = "Orders"
BODY_START = "Validate"  # the first state of the order workflow itself
WRAPPER_PREFIX = "Idempotency."


def order(order_id: int, card: str = "4242 4242 4242 4242") -> dict[str, Any]:
    return {
        "order": {"id": order_id, "total": 42.5, "currency": "EUR"},
        "customer": {"id": "cust-7"},
        "payment": {"card": card},
        "shipping": "express",
    }


class Demo:
    def __init__(self, deployment: Deployment) -> None:
        self.deployment = deployment
        self.failures: list[str] = []

    def check(self, ok: bool, what: str) -> str:
        if not ok:
            self.failures.append(what)
        return "ok" if ok else "FAILED: " + what

    @staticmethod
    def describe(execution: Execution) -> str:
        states = execution.entered_states()
        ours = [s for s in states if s.startswith(WRAPPER_PREFIX)]
        ran = "yes" if BODY_START in states else "no"
        return (
            f"{execution.status:<9} body ran: {ran:<3}  states entered: {len(states)} "
            f"({len(ours)} of them the wrapper's), Lambda calls: {execution.lambda_invocations()}"
        )

    def first_run_and_replay(self) -> None:
        print("\n1. A first run executes the workflow; a duplicate replays the stored result")
        first = self.deployment.run(WORKFLOW, order(1001), name="order-1001-first")
        print(f"   first run of order 1001       {self.describe(first)}")
        print(f"   output: {json.dumps(first.output)}")
        replay = self.deployment.run(WORKFLOW, order(1001), name="order-1001-duplicate")
        print(f"   duplicate of order 1001       {self.describe(replay)}")
        print(
            "   "
            + self.check(
                first.status == replay.status == "SUCCEEDED"
                and BODY_START in first.entered_states()
                and BODY_START not in replay.entered_states()
                and replay.output == first.output,
                "the duplicate returned the first run's output without running the workflow",
            )
            + ": the duplicate got the first run's output, byte for byte, without running the workflow"
        )

    def concurrent_duplicates(self) -> None:
        print("\n2. Ten concurrent duplicates run the workflow once and all get the same output")
        with ThreadPoolExecutor(max_workers=10) as pool:
            arns = list(pool.map(lambda i: self.deployment.start(WORKFLOW, order(1002), name=f"order-1002-{i}"), range(10)))
            executions = list(pool.map(self.deployment.wait, arns))
        statuses = {e.status for e in executions}
        runs = sum(BODY_START in e.entered_states() for e in executions)
        outputs = {json.dumps(e.output, sort_keys=True) for e in executions}
        waited = sum(any(s.endswith("Await") for s in e.entered_states()) for e in executions)
        print(
            f"   statuses: {sorted(statuses)}, workflow ran {runs} time(s), distinct outputs: {len(outputs)}, "
            f"{waited} duplicate(s) waited for the holder, the rest found the result stored"
        )
        print(
            "   "
            + self.check(
                statuses == {"SUCCEEDED"} and runs == 1 and len(outputs) == 1, "ten duplicates ran the workflow exactly once"
            )
            + ": exactly once"
        )

    def failure_releases_the_key(self) -> None:
        print("\n3. A failing run releases the key, so the next run executes again")
        declined = self.deployment.run(WORKFLOW, order(1003, card="4000 0000 0000 0002"), name="order-1003-declined")
        print(f"   order 1003, declined card     {self.describe(declined)}")
        print(f"   error: {declined.error}: {json.loads(declined.cause).get('errorMessage') if declined.cause else ''}")
        left = [item for item in self.deployment.items() if item["status"]["S"] == "INPROGRESS"]
        retried = self.deployment.run(WORKFLOW, order(1003), name="order-1003-retried")
        print(f"   order 1003, another card      {self.describe(retried)}")
        print(
            "   "
            + self.check(
                declined.status == "FAILED"
                and declined.error == "CardDeclined"
                and not left
                and retried.status == "SUCCEEDED"
                and BODY_START in retried.entered_states(),
                "the failure released the key and the retry ran",
            )
            + ": the failure kept its own error, left no record in progress, and the retry ran the workflow"
        )

    def records(self) -> None:
        print("\n4. The idempotency table now holds")
        for item in sorted(self.deployment.items(), key=lambda i: i["id"]["S"]):
            namespace, digest = item["id"]["S"].split("#")
            print(f"   {namespace:<28} {digest[:16]}...  {item['status']['S']}")


def main(argv: list[str]) -> int:
    assembly = Path(argv[1] if len(argv) > 1 else "cdk.out")
    if not (assembly / f"{STACK}.template.json").exists():
        print(f"{assembly}/{STACK}.template.json not found: run `cdk synth` first (./dev demo does).")
        return 2
    print("idempotent_constructs demo: the example order workflow on the embedded AWS emulator (moto)")
    with LocalEmulator() as emulator:
        deployment = emulator.deploy(assembly, STACK)
        kinds = [r["Type"] for r in deployment.template["Resources"].values()]
        print(
            f"Deployed {STACK} from {assembly}: {len(kinds)} resources "
            f"({kinds.count('AWS::StepFunctions::StateMachine')} state machine, "
            f"{kinds.count('AWS::Lambda::Function')} Lambda functions, {kinds.count('AWS::DynamoDB::Table')} table)"
        )
        if deployment.unmodelled:
            print(f"The emulator does not model {', '.join(deployment.unmodelled)}: deployed without them.")
        demo = Demo(deployment)
        demo.first_run_and_replay()
        demo.concurrent_duplicates()
        demo.failure_releases_the_key()
        demo.records()
    if demo.failures:
        print(f"\n{len(demo.failures)} scenario(s) did not behave as promised: {demo.failures}")
        return 1
    print("\nAll scenarios behaved as promised.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
