from flytekit import Email, LaunchPlan, PagerDuty, Slack, WorkflowExecutionPhase, task, workflow


@task
def check(x: int) -> int:
    if x < 0:
        raise ValueError(f"x must not be negative, got {x}")
    return x * 2


@workflow
def notify_wf(x: int) -> int:
    return check(x=check(x=x))


notify_lp = LaunchPlan.get_or_create(
    notify_wf, name="notify_lp",
    notifications=[
        Email(phases=[WorkflowExecutionPhase.SUCCEEDED], recipients_email=["team@example.com"]),
        Slack(phases=[WorkflowExecutionPhase.FAILED], recipients_email=["alerts@example.slack.com"]),
        PagerDuty(phases=[WorkflowExecutionPhase.FAILED, WorkflowExecutionPhase.ABORTED],
                  recipients_email=["oncall@example.pagerduty.com"]),
    ],
)
