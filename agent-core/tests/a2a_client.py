"""Talks to an agent served over A2A with the official A2A SDK (`a2a-sdk` from PyPI, pinned
in scripts/protocols.sh) and prints what it got as one JSON object on stdout
(agent-core/tests/a2a.rs checks it).

    python3 a2a_client.py http://127.0.0.1:PORT USER_TOKEN OTHER_TOKEN

1. the agent card, resolved from /.well-known/agent-card.json;
2. a message (not streamed): a new task in a new context;
3. a second message in that context: the payment waits for approval (input-required);
4. a "yes" continuing that task: it still waits (no turn runs);
5. GetTask of that task;
6. another user: a message in the first context and GetTask of its task, both refused;
7. no token: refused;
8. a streamed message in a new context: the task, the reply's chunks, the final status.
"""

import asyncio
import json
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types import GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState
from google.protobuf import json_format


def message(text, context_id=None, task_id=None):
    m = Message(role=Role.ROLE_USER, parts=[Part(text=text)], message_id=str(uuid.uuid4()))
    if context_id:
        m.context_id = context_id
    if task_id:
        m.task_id = task_id
    return SendMessageRequest(message=m)


def task_json(task):
    return {
        "id": task.id,
        "context_id": task.context_id,
        "state": TaskState.Name(task.status.state),
        "status_text": "".join(p.text for p in task.status.message.parts),
        "artifacts": ["".join(p.text for p in a.parts) for a in task.artifacts],
        "history": len(task.history),
        "metadata": json_format.MessageToDict(task.metadata),
    }


async def client_for(base, token, streaming):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx.AsyncClient(headers=headers, timeout=30)
    config = ClientConfig(httpx_client=http, streaming=streaming)
    return await create_client(base, client_config=config), http


async def send(client, request):
    """The events of one SendMessage, as JSON."""
    events = []
    async for e in client.send_message(request):
        events.append(e)
    return events


async def refused(coro):
    try:
        await coro
    except Exception as e:  # the SDK's error for the refusal
        return f"{type(e).__name__}: {e}"
    return None


async def main():
    base, user, other = sys.argv[1:4]
    out = {}

    ana, http = await client_for(base, user, streaming=False)
    card = await A2ACardResolver(http, base).get_agent_card()
    out["card"] = {
        "name": card.name,
        "skills": [s.id for s in card.skills],
        "interfaces": [(i.url, i.protocol_binding, i.protocol_version) for i in card.supported_interfaces],
        "streaming": card.capabilities.streaming,
    }

    [first] = await send(ana, message("hello"))
    first = task_json(first.task)
    out["first"] = first
    [second] = await send(ana, message("pay 5 euros", context_id=first["context_id"]))
    second = task_json(second.task)
    out["second"] = second
    [yes] = await send(ana, message("yes", context_id=first["context_id"], task_id=second["id"]))
    out["yes"] = task_json(yes.task)
    out["get"] = task_json(await ana.get_task(GetTaskRequest(id=second["id"])))

    bob, bob_http = await client_for(base, other, streaming=False)
    out["bob_send"] = await refused(send(bob, message("hi", context_id=first["context_id"])))
    out["bob_get"] = await refused(bob.get_task(GetTaskRequest(id=second["id"])))
    nobody, nobody_http = await client_for(base, None, streaming=False)
    out["nobody"] = await refused(send(nobody, message("hi")))

    streaming, streaming_http = await client_for(base, user, streaming=True)
    events = await send(streaming, message("hello again"))
    kinds = []
    chunks = []
    final = None
    for e in events:
        kind = e.WhichOneof("payload")
        kinds.append(kind)
        if kind == "artifact_update":
            chunks.append("".join(p.text for p in e.artifact_update.artifact.parts))
        if kind == "status_update":
            final = TaskState.Name(e.status_update.status.state)
    out["stream"] = {"kinds": kinds, "text": "".join(chunks), "final": final}

    for h in (http, bob_http, nobody_http, streaming_http):
        await h.aclose()
    print(json.dumps(out))


asyncio.run(main())
