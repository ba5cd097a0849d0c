"""Talks to the server example's OpenAI-compatible endpoint with the official `openai`
package, as any OpenAI client would, and prints what it got as one JSON object on
stdout (examples/tests/protocols.rs checks it).

    python3 openai_client.py http://127.0.0.1:PORT USER_TOKEN OTHER_TOKEN OPERATOR_TOKEN

The tokens are API keys (bearer tokens): a chat user's, another user's and the
operator's.

1. a plain completion on a new session (the server names it in `x-session-id`);
2. the same session continued by sending that header back (`extra_headers`);
3. a streamed completion on that session (`stream=True`, usage included);
4. a conversation kept by re-sending the whole history without any session id (what
   the SDKs do), with `user` set: the booking ends waiting for approval
   (`finish_reason: "tool_calls"`); a second "yes" runs no turn and says the call
   still waits; the same first message opens a new conversation;
5. the waiting call decided by a `tool` message: refused for the chat user (403),
   accepted with the operator's key (the room is booked);
6. another user on the first session: 403;
7. refusals: no user message, an unknown model (404), `tools`, `n=2`, a message over
   the agent's limit (400, not retried), a body over the server's limit (413, not
   retried).
"""

import json
import os
import sys

try:  # the openai package's HTTP client (httpx2 in recent releases, httpx before)
    import httpx2 as httpx
except ImportError:
    import httpx
import openai
from openai import OpenAI

MODEL = "concierge"


def agent_of(obj):
    """The `agent` field the server adds to a completion or a chunk."""
    extra = getattr(obj, "model_extra", None) or {}
    return extra.get("agent")


def summary(raw):
    c = raw.parse()
    m = c.choices[0].message
    return {
        "session": raw.headers.get("x-session-id"),
        "object": c.object,
        "model": c.model,
        "id": c.id,
        "role": m.role,
        "content": m.content,
        "tool_calls": [
            {"id": t.id, "type": t.type, "name": t.function.name, "arguments": t.function.arguments}
            for t in (m.tool_calls or [])
        ],
        "finish_reason": c.choices[0].finish_reason,
        "usage": c.usage.model_dump() if c.usage else None,
        "agent": agent_of(c),
        "message": m.model_dump(exclude_none=True),
    }


def completion(client, messages, **kwargs):
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=messages, **kwargs)
    return summary(raw)


def streamed(client, text, session):
    raw = client.chat.completions.with_raw_response.create(
        model=MODEL,
        messages=[{"role": "user", "content": text}],
        stream=True,
        stream_options={"include_usage": True},
        extra_headers={"x-session-id": session},
    )
    out = {
        "session": raw.headers.get("x-session-id"),
        "content_type": raw.headers.get("content-type"),
        "chunks": 0,
        "deltas": [],
        "objects": set(),
        "models": set(),
        "roles": [],
        "finish_reason": None,
        "agent": None,
        "usage": None,
    }
    for chunk in raw.parse():
        out["chunks"] += 1
        out["objects"].add(chunk.object)
        out["models"].add(chunk.model)
        if chunk.usage is not None:
            out["usage"] = chunk.usage.model_dump()
        if agent_of(chunk) is not None:
            out["agent"] = agent_of(chunk)
        for choice in chunk.choices:
            if choice.delta.role:
                out["roles"].append(choice.delta.role)
            if choice.delta.content:
                out["deltas"].append(choice.delta.content)
            if choice.finish_reason:
                out["finish_reason"] = choice.finish_reason
    out["objects"] = sorted(out["objects"])
    out["models"] = sorted(out["models"])
    out["content"] = "".join(out["deltas"])
    return out


def refusal(call):
    """The error a call raised, as the client reports it."""
    try:
        call()
        return None
    except openai.APIStatusError as e:
        body = e.body if isinstance(e.body, dict) else {}
        return {
            "class": type(e).__name__,
            "status": e.status_code,
            "message": body.get("message"),
            "type": body.get("type"),
            "code": body.get("code"),
            "param": body.get("param"),
        }


def main():
    base, user_key, other_key, operator_key = sys.argv[1:5]
    sent = []
    http = httpx.Client(event_hooks={"request": [lambda r: sent.append(r.url.path)]})

    def client_for(key, retries=0):
        return OpenAI(base_url=base.rstrip("/") + "/v1", api_key=key, max_retries=retries,
                      timeout=60, http_client=http)

    client = client_for(user_key)
    result = {"openai_version": openai.__version__}
    system = {"role": "system", "content": "You are a concierge."}

    first = completion(client, [system, {"role": "user", "content": "Hi, I'd like to book a hotel room"}])
    result["first"] = first
    session = first["session"]
    result["second"] = completion(
        client, [system, {"role": "user", "content": "Lisbon, please"}],
        extra_headers={"x-session-id": session},
    )
    result["streamed"] = streamed(client, "July 1st for 2 guests", session)

    # 4. The history re-sent, no session id: the conversation goes on.
    user = f"py-user-{os.getpid()}"
    history = [system, {"role": "user", "content": "A room in Porto on August 3rd for 3 guests"}]
    porto = completion(client, history, user=user)
    history += [porto["message"], {"role": "user", "content": "Yes, book it please"}]
    yes = completion(client, history, user=user)
    history += [yes["message"], {"role": "user", "content": "Yes! Book it now"}]
    again = completion(client, history, user=user)
    # The conversation goes on after a message that ran no turn.
    history += [again["message"], {"role": "user", "content": "Is it booked yet?"}]
    later = completion(client, history, user=user)
    history = history[:-2]
    other_conversation = completion(client, history[:2], user=user)
    result["history"] = {"porto": porto, "yes": yes, "again": again, "later": later,
                         "new": other_conversation}

    # 5. The decision: a tool message, from the operator only.
    decision = history[:-1] + [
        {"role": "tool", "tool_call_id": yes["tool_calls"][0]["id"], "content": "approve"}
    ] if yes["tool_calls"] else history
    result["decided_by_user"] = refusal(lambda: client.chat.completions.create(
        model=MODEL, messages=decision, user=user))
    result["decided_by_operator"] = completion(
        client_for(operator_key), decision, extra_headers={"x-session-id": yes["session"]})

    # 6. Another user on the first session.
    result["other_user"] = refusal(lambda: client_for(other_key).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Hello"}],
        extra_headers={"x-session-id": session}))

    # 7. Refusals, each sent once even by a client that retries.
    retrying = client_for(user_key, retries=2)
    refusals = {}
    for name, kwargs in {
        "no_user_message": {"messages": [{"role": "system", "content": "no user message"}]},
        "unknown_model": {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
        "tools": {"messages": [{"role": "user", "content": "hi"}], "tools": [{
            "type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]},
        "n": {"messages": [{"role": "user", "content": "hi"}], "n": 2},
        "long_message": {"messages": [{"role": "user", "content": "a" * 40_000}]},
        "huge_body": {"messages": [{"role": "user", "content": "hi"},
                                   {"role": "assistant", "content": "b" * 5_000_000}]},
    }.items():
        kwargs = {"model": MODEL, **kwargs}
        before = len(sent)
        r = refusal(lambda: retrying.chat.completions.create(**kwargs))
        if r is not None:
            r["requests"] = len(sent) - before
        refusals[name] = r
    result["refusals"] = refusals

    models = client.models.list()
    result["models"] = [m.id for m in models.data]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
