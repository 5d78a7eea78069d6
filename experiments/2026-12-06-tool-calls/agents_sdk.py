"""The OpenAI Agents SDK (`openai-agents`, not a dependency of this project) against `hamburger serve`, through its
Responses API model: an agent with a function tool (made to call it), the same agent running on after the tool's
output, and an agent without tools, run and streamed. Prints one JSON line per run: what the SDK returned.

    hamburger serve --port 8123 &                      # the default model, lossless verify mode
    python -m venv agents-env && agents-env/bin/pip install openai-agents
    agents-env/bin/python experiments/2026-12-06-tool-calls/agents_sdk.py --url http://127.0.0.1:8123/v1 \
        > experiments/2026-12-06-tool-calls/agents_sdk.jsonl
"""

import argparse
import asyncio
import json
from importlib.metadata import version

from agents import (Agent, ModelSettings, OpenAIResponsesModel, Runner, function_tool,
                    set_tracing_disabled)
from openai import AsyncOpenAI


@function_tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"18 C and sunny in {city}"


def line(run: str, result, **extra) -> str:
    return json.dumps({"run": run, "final_output": result.final_output,
                       "items": [type(i).__name__ for i in result.new_items], **extra})


async def main(url: str) -> None:
    set_tracing_disabled(True)
    model = OpenAIResponsesModel(model="hamburger", openai_client=AsyncOpenAI(base_url=url, api_key="none"))
    print(json.dumps({"openai-agents": version("openai-agents"), "openai": version("openai")}))
    weather = dict(name="weather", instructions="You answer questions about the weather.", tools=[get_weather],
                   model=model)
    first = Agent(**weather, model_settings=ModelSettings(tool_choice="required", max_tokens=200),
                  tool_use_behavior="stop_on_first_tool")
    print(line("tool, stop on its output", await Runner.run(first, "What is the weather in Paris?")))
    loop = Agent(**weather, model_settings=ModelSettings(tool_choice="required", max_tokens=120))
    print(line("tool, then the model again", await Runner.run(loop, "What is the weather in Paris?")))
    plain = Agent(name="plain", instructions="Be brief.", model=model, model_settings=ModelSettings(max_tokens=64))
    print(line("no tools", await Runner.run(plain, "Say hi.")))
    streamed = Runner.run_streamed(plain, "Say hi.")
    events = [e.type async for e in streamed.stream_events()]
    print(line("no tools, streamed", streamed, events=len(events)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8123/v1", help="the server's /v1 address")
    asyncio.run(main(parser.parse_args().url))
