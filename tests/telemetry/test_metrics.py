"""``GET /v1/metrics`` and ``[host.telemetry]`` (docs/telemetry.md#metrics,
docs/telemetry.md#turning-it-on): the Prometheus text of a host with telemetry, 404 without,
and the table of an agents file."""

from __future__ import annotations

import re
from pathlib import Path

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from afp_runtime.agents import read_config
from afp_runtime.cost import Price
from afp_runtime.messages import Usage
from afp_runtime.telemetry import Telemetry
from afp_runtime.testing import answer, call, tool_reply
from tests.api.conftest import Api, agent, error_of, settle


async def test_metrics_are_served_in_the_prometheus_text_format(api: Api) -> None:
    """After one turn with a tool call: iterations, runs, model-call duration and tokens,
    tool duration, commits and their latency, each with its HELP and TYPE lines, as
    ``text/plain``."""
    telemetry = Telemetry(span_exporter=InMemorySpanExporter(), metrics="none")
    script = [tool_reply(call("c1", "alpha_tool")), answer("done")]
    async with api.running(agent(script), host_options={"telemetry": telemetry}) as (
        host,
        client,
    ):
        await host.post("ops", "go")
        await settle(host)
        response = await client.get("/v1/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = response.text
    assert "# TYPE afp_iterations_total counter" in text
    assert 'afp_runs_total{afp_run_status="answered"} 1' in text
    assert "# TYPE gen_ai_client_operation_duration_seconds histogram" in text
    assert 'gen_ai_client_operation_duration_seconds_count{gen_ai_operation_name="chat"' in text
    assert (
        'afp_tool_duration_seconds_count{afp_tool_status="ok",gen_ai_tool_name="alpha_tool"} 1'
        in text
    )
    assert 'le="+Inf"' in text
    commits = re.search(r'^afp_commits_total\{afp_commit_outcome="ok"\} (\d+)$', text, re.M)
    assert commits is not None and int(commits.group(1)) >= 3
    assert "# TYPE afp_commit_duration_seconds histogram" in text


async def test_without_telemetry_metrics_are_404(api: Api) -> None:
    """A host without telemetry answers ``GET /v1/metrics`` with 404 ``telemetry-off``."""
    async with api.running(agent([answer("hi")])) as (_, client):
        response = await client.get("/v1/metrics")
    assert response.status_code == 404 and error_of(response)["code"] == "telemetry-off"


def test_the_host_table_turns_telemetry_on(tmp_path: Path) -> None:
    """``[host.telemetry]`` with its keys becomes the host's ``Telemetry``; ``enabled = false``
    leaves it off."""
    path = tmp_path / "agents.toml"
    head = '[[agents]]\nid = "a"\n[agents.model]\nprovider = "scripted"\nmodel = "m"\n'
    head += 'script = "afp_runtime.demo:demo_script"\n'
    path.write_text(
        head + '[host.telemetry]\ntraces = "console"\nmetrics = "none"\ncaptureContent = true\n'
        'serviceName = "desk"\n',
        encoding="utf-8",
    )
    config, _ = read_config(path)
    assert config.host.telemetry is not None
    assert config.host.telemetry.telemetry() == Telemetry(
        traces="console", metrics="none", capture_content=True, service_name="desk"
    )
    path.write_text(head + "[host.telemetry]\nenabled = false\n", encoding="utf-8")
    config, _ = read_config(path)
    assert config.host.telemetry is not None and config.host.telemetry.telemetry() is None


async def test_the_cost_of_priced_calls_is_a_counter(api: Api) -> None:
    """An agent with pricing: the known cost adds up per model, and a call that reported no
    usage counts as unknown, never as zero cost."""
    telemetry = Telemetry(span_exporter=InMemorySpanExporter(), metrics="none")
    script = [
        tool_reply(call("c1", "alpha_tool")),
        answer("done", usage=Usage(input=1000, output=0)),
    ]
    definition = agent(script, pricing={"mock": Price(input=1e-6, output=1e-6)})
    async with api.running(definition, host_options={"telemetry": telemetry}) as (host, client):
        await host.post("ops", "go")
        await settle(host)
        text = (await client.get("/v1/metrics")).text
    cost = re.search(
        r'^afp_cost_total\{[^}]*gen_ai_request_model="mock"[^}]*\} ([\d.e-]+)$', text, re.M
    )
    assert cost is not None and float(cost.group(1)) == 0.001
    assert re.search(r"^afp_cost_unknown_total\{[^}]*usage-unreported[^}]*\} 1$", text, re.M)
