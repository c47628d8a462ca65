"""Golden transcripts: scripted runs whose every request and response is pinned as JSON.

`python tests/golden/transcripts.py` checks them; `--write` regenerates them on purpose (review the
diff: a change here is a change in what models are sent). tests/test_golden.py runs the check.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from miniagents import Agent, Runner, function_tool  # noqa: E402
from miniagents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402


@function_tool
def get_order_status(order_id: str) -> dict:
    """Look up an order.

    Args:
        order_id: The order number, e.g. A1.
    """
    return {"order_id": order_id, "status": "delayed", "days_late": 3}


@function_tool
def issue_refund(order_id: str, amount_eur: float) -> str:
    """Refund part of an order."""
    return f"refunded {amount_eur:.2f} EUR on {order_id}"


def helpdesk() -> list:
    """Triage looks an order up, hands off to Refunds, which refunds and answers."""
    refunds_model = ScriptedModel([
        [function_call("issue_refund", {"order_id": "A1", "amount_eur": 5}, call_id="call_3")],
        [assistant_message("I refunded 5.00 EUR for the delay on order A1.")],
    ])
    refunds = Agent(name="Refunds", handoff_description="Refunds and compensation.",
                    instructions="You issue refunds.", tools=[issue_refund], model=refunds_model)
    triage_model = ScriptedModel([
        [function_call("get_order_status", {"order_id": "A1"}, call_id="call_1")],
        [assistant_message("Your order is late; let me get Refunds."),
         function_call("transfer_to_refunds", "{}", call_id="call_2")],
    ])
    triage = Agent(name="Triage", instructions="You route help-desk requests.", tools=[get_order_status],
                   handoffs=[refunds], model=triage_model)
    result = Runner.run_sync(triage, "Order A1 is late. Can I get something back?")
    calls = sorted(triage_model.calls + refunds_model.calls, key=lambda c: len(c.input))
    responses = [r.output for r in result.raw_responses]
    return [{"instructions": c.system_instructions, "tools": c.tool_names, "input": c.input, "output": out}
            for c, out in zip(calls, responses)] + [{"final_output": result.final_output,
                                                     "last_agent": result.last_agent.name}]


TRANSCRIPTS = {"helpdesk": helpdesk}


def check(write: bool = False) -> list:
    """Names of transcripts that differ from their golden file (after writing them, with write=True)."""
    changed = []
    for name, make in TRANSCRIPTS.items():
        path = HERE / f"transcript_{name}.json"
        text = json.dumps(make(), indent=2, ensure_ascii=False) + "\n"
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            changed.append(name)
            if write:
                path.write_text(text, encoding="utf-8")
    return changed


if __name__ == "__main__":
    differing = check(write="--write" in sys.argv)
    print("golden transcripts:", "written: " if "--write" in sys.argv else "differ: ", differing or "none")
    sys.exit(1 if differing and "--write" not in sys.argv else 0)
