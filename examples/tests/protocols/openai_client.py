"""Talks to the server example's OpenAI-compatible endpoint with the official `openai`
package, as any OpenAI client would, and prints what it got as one JSON object on
stdout (examples/tests/protocols.rs checks it).

    python3 openai_client.py http://127.0.0.1:PORT

1. a plain completion on a new session (the server names it in `x-session-id`);
2. the same session continued by sending that header back (`extra_headers`);
3. a streamed completion on that session (`stream=True`, usage included);
4. a session named by the `user` field, over two calls;
5. a request without a user message: a 400 (`openai.BadRequestError`).
"""

import json
import os
import sys

import openai
from openai import OpenAI

MODEL = "concierge-under-test"


def agent_of(obj):
    """The `agent` field the server adds to a completion or a chunk."""
    extra = getattr(obj, "model_extra", None) or {}
    return extra.get("agent")


def completion(client, text, **kwargs):
    raw = client.chat.completions.with_raw_response.create(
        model=MODEL,
        messages=[
            {"role": "system", "content": "You are a concierge."},
            {"role": "user", "content": text},
        ],
        **kwargs,
    )
    c = raw.parse()
    return {
        "session": raw.headers.get("x-session-id"),
        "object": c.object,
        "model": c.model,
        "id": c.id,
        "role": c.choices[0].message.role,
        "content": c.choices[0].message.content,
        "finish_reason": c.choices[0].finish_reason,
        "usage": c.usage.model_dump() if c.usage else None,
        "agent": agent_of(c),
    }


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


def main():
    base = sys.argv[1].rstrip("/")
    client = OpenAI(base_url=base + "/v1", api_key="not-needed", max_retries=0, timeout=60)
    result = {"openai_version": openai.__version__}

    first = completion(client, "Hi, I'd like to book a hotel room")
    result["first"] = first
    session = first["session"]
    result["second"] = completion(
        client, "Lisbon, please", extra_headers={"x-session-id": session}
    )
    result["streamed"] = streamed(client, "July 1st for 2 guests", session)

    user = f"py-user-{os.getpid()}"
    result["by_user"] = [
        completion(client, "A room in Porto on August 3rd for 3 guests", user=user),
        completion(client, "Yes, book it please", user=user),
    ]

    try:
        client.chat.completions.create(
            model=MODEL, messages=[{"role": "system", "content": "no user message"}]
        )
        result["bad_request"] = None
    except openai.BadRequestError as e:
        body = e.body if isinstance(e.body, dict) else {}
        result["bad_request"] = {
            "status": e.status_code,
            "message": body.get("message"),
            "type": body.get("type"),
        }

    models = client.models.list()
    result["models"] = [m.id for m in models.data]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
