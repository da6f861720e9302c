"""testing.gaps.lambda_service_errors: when the Lambda service fails an invocation, the task's error is
"Lambda.<code>", which Retry rules match; moto alone names it "Exception"."""

from __future__ import annotations

from idempotent_constructs.testing import Faults


def invoke_while_lambda_throttles(emulator, function_arn: str):
    definition = {
        "StartAt": "Invoke",
        "States": {
            "Invoke": {
                "Type": "Task",
                # The function's ARN as the resource, as LambdaInvoke(payload_response_only=True) writes it.
                "Resource": function_arn,
                "End": True,
            }
        },
    }
    with emulator.faults(Faults(lambda_invocations=1.0, seed=7)):
        return emulator.run_definition(definition, {})


def test_a_failed_invocation_is_named_after_the_lambda_services_error_code(emulator, echo_function):
    execution = invoke_while_lambda_throttles(emulator, echo_function)
    assert (execution.status, execution.error) in {
        ("FAILED", "Lambda.TooManyRequestsException"),
        ("FAILED", "Lambda.ServiceException"),
    }


def test_without_the_workaround_moto_names_it_exception(emulator, echo_function):
    with emulator.without_workaround("lambda_service_errors"):
        execution = invoke_while_lambda_throttles(emulator, echo_function)
    assert (execution.status, execution.error) == ("FAILED", "Exception")
