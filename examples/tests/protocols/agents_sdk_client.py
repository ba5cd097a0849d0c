"""Runs an OpenAI Agents SDK agent (`openai-agents`) whose model is the server example's
Responses API (`OpenAIResponsesModel` on `POST /v1/responses`), and prints what it got as
one JSON object on stdout (examples/tests/protocols.rs checks it).

    python3 agents_sdk_client.py http://127.0.0.1:PORT USER_TOKEN OTHER_TOKEN

The tokens are API keys (bearer tokens): a chat user's and another user's. Tracing is
disabled, so nothing is sent anywhere but the server under test.

1. a conversation kept with `previous_response_id`: two `Runner.run`, then a
   `Runner.run_streamed` (its raw Responses events are recorded);
2. a conversation kept by re-sending the history (`result.to_input_list()`), what the
   SDK does without `previous_response_id`;
3. refusals: a wrong API key (401), another user's `previous_response_id` (403).
"""

import asyncio
import json
import sys

try:  # the openai package's HTTP client (httpx2 in recent releases, httpx before)
    import httpx2 as httpx
except ImportError:
    import httpx
import agents
import openai
from agents import Agent, OpenAIResponsesModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI

MODEL = "concierge"


def failure(e):
    """An exception, as the test reads it."""
    return {
        "class": type(e).__name__,
        "status": getattr(e, "status_code", None),
        "code": getattr(e, "code", None),
        "message": str(e),
    }


async def main():
    set_tracing_disabled(True)
    base, user_key, other_key = sys.argv[1:4]
    exchanges = []

    async def seen(response):
        exchanges.append({
            "path": response.request.url.path,
            "status": response.status_code,
            "session": response.headers.get("x-session-id"),
        })

    http = httpx.AsyncClient(event_hooks={"response": [seen]}, timeout=60)

    def agent_for(key):
        client = AsyncOpenAI(base_url=base.rstrip("/") + "/v1", api_key=key, max_retries=0,
                             http_client=http)
        return Agent(name="Concierge client", instructions="You help guests book hotels.",
                     model=OpenAIResponsesModel(model=MODEL, openai_client=client))

    def turn(result):
        last = exchanges[-1]
        usage = result.context_wrapper.usage
        return {
            "output": result.final_output,
            "response_id": result.last_response_id,
            "session": last["session"],
            "status": last["status"],
            "path": last["path"],
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
        }

    agent = agent_for(user_key)
    out = {"openai_version": openai.__version__, "agents_version": agents.__version__}

    # 1. previous_response_id: the server keeps the conversation.
    first = await Runner.run(agent, "Hi, I'd like to book a hotel room")
    out["first"] = turn(first)
    second = await Runner.run(agent, "Lisbon, please", previous_response_id=first.last_response_id)
    out["second"] = turn(second)
    streamed = Runner.run_streamed(agent, "July 1st for 2 guests",
                                   previous_response_id=second.last_response_id)
    kinds, deltas, numbers = [], [], []
    async for event in streamed.stream_events():
        if event.type == "raw_response_event":
            kinds.append(event.data.type)
            numbers.append(getattr(event.data, "sequence_number", None))
            if event.data.type == "response.output_text.delta":
                deltas.append(event.data.delta)
    out["streamed"] = {**turn(streamed), "kinds": kinds, "deltas": deltas,
                       "sequence_numbers": numbers}

    # 2. The history re-sent (no previous_response_id): the session derived from it.
    porto = await Runner.run(agent, "I'd like a room in Porto")
    out["porto"] = turn(porto)
    history = porto.to_input_list() + [{"role": "user", "content": "August 3rd for 3 guests"}]
    resent = await Runner.run(agent, history)
    out["resent"] = turn(resent)
    out["resent_items"] = len(history)

    # 3. Refusals.
    try:
        await Runner.run(agent_for("not-a-token"), "Hello")
        out["wrong_token"] = None
    except Exception as e:  # the SDK raises the client's error
        out["wrong_token"] = failure(e)
    try:
        await Runner.run(agent_for(other_key), "Hello",
                         previous_response_id=first.last_response_id)
        out["other_user"] = None
    except Exception as e:
        out["other_user"] = failure(e)

    out["paths"] = sorted({x["path"] for x in exchanges})
    await http.aclose()
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
