"""Gap: moto 5.2.5 parses JSONata states, binds ``$states``, variables and ``Assign``, but leaves its one
evaluator hook (``moto.stepfunctions.parser.asl.jsonata.jsonata._eval_jsonata``) unset; the text it
would hand that hook has every variable pasted in as a literal (strings unescaped).

AWS evaluates each JSONata field with JSONata 2.0.6 (jsonata-js), ``$states`` and the variables bound
as values; an expression that evaluates to nothing, or raises, fails the state with
States.QueryEvaluationError, which Task, Parallel and Map states can catch ("Transforming data with
JSONata in Step Functions").

Here every JSONata field of a state is evaluated by ``idempotent_constructs._jsonata.engine``, which
evaluates as AWS's engine does where measured. moto's definition parser also hands the hook a character
beyond U+FFFF as its two surrogates, two characters, which a regular expression then matches one by one:
each pair is joined again first. Evidence: tests/emulator/gaps/test_jsonata.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._jsonata.engine import UNDEFINED, BoundExceeded, Bounds, JSONataError, evaluate

if TYPE_CHECKING:
    from ..patches import Patch

# The bounds every evaluation is held to: AWS's, set by ``gaps.jsonata_bounds`` (none without it).
BOUNDS: Bounds | None = None


def install(patch: Patch) -> None:
    from moto.stepfunctions.parser.api import EvaluationFailedEventDetails, HistoryEventType
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )
    from moto.stepfunctions.parser.asl.component.common.query_language import QueryLanguageMode
    from moto.stepfunctions.parser.asl.component.common.string import string_expression
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    def fail(env: Any, expression: str, cause: str) -> None:
        error = StatesErrorName(typ=StatesErrorNameType.StatesQueryEvaluationError)
        details = EvaluationFailedEventDetails(error=error.error_name, cause=f"The JSONata expression '{expression}' {cause}")
        failure = FailureEvent(
            env=env,
            error_name=error,
            event_type=HistoryEventType.EvaluationFailed,
            event_details=EventDetails(evaluationFailedEventDetails=details),
        )
        env.event_manager.add_event(
            context=env.event_history_context,
            event_type=HistoryEventType.EvaluationFailed,
            event_details=EventDetails(evaluationFailedEventDetails=details),
        )
        raise FailureEventException(failure_event=failure)

    def bindings(env: Any, with_states: bool) -> dict[str, Any]:
        store = env.variable_store
        values = {**store._outer_scope, **store._inner_scope}
        if with_states:
            values["states"] = env.states._states_data
        return values

    def evaluate_jsonata(component: Any, env: Any) -> None:
        try:
            result = evaluate(_joined(component.expression), bindings(env, with_states=True), bounds=BOUNDS)
        except BoundExceeded as error:  # AWS writes a bound's message after a colon, a coded error's after a period
            fail(env, component.expression, f"threw an error during evaluation: {error}")
        except JSONataError as error:
            fail(env, component.expression, f"threw an error during evaluation. {error}")
        if result is UNDEFINED:
            fail(env, component.expression, "returned nothing (undefined).")
        env.stack.append(result)

    def evaluate_variable(component: Any, env: Any) -> None:
        jsonata_mode = component.query_language_mode == QueryLanguageMode.JSONata
        result = evaluate(_joined(component.expression), bindings(env, with_states=jsonata_mode), bounds=BOUNDS)
        env.stack.append(None if result is UNDEFINED else result)

    patch(string_expression.StringJSONata, "_eval_body", evaluate_jsonata)
    patch(string_expression.StringVariableSample, "_eval_body", evaluate_variable)


def _joined(text: str) -> str:
    """``text`` with each surrogate pair one character again (a lone surrogate stays as it is)."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
