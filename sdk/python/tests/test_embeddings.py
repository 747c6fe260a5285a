"""Embeddings, re-embedding jobs, similarity and the OpenAI-compatible route."""

from __future__ import annotations

import base64
import struct
import time

import pytest

from engram import BadRequestError, ConflictError, NotFoundError


def test_generate_batch_models(client):
    one = client.embeddings.generate("a puppy")
    assert one.dimensions == len(one.embedding) > 0 and one.model
    many = client.embeddings.batch(["a puppy", "a kitten"])
    assert len(many.embeddings) == 2 and many.model == one.model
    assert many.embeddings[0] == pytest.approx(one.embedding, abs=1e-6)
    catalog = client.embeddings.models()
    assert catalog.default_model == one.model
    assert any(m.name == one.model and m.available and m.default for m in catalog.models)
    with pytest.raises(BadRequestError) as err:
        client.embeddings.generate("x", model="no-such-model")
    assert err.value.code == "model_not_available" and err.value.details["available_models"]


def test_openai_compatible_create(client):
    floats = client.embeddings.create(input=["a puppy", "a kitten"])
    assert floats.object == "list" and [d.index for d in floats.data] == [0, 1]
    vec = floats.data[0].embedding
    b64 = client.embeddings.create(input="a puppy", encoding_format="base64")
    raw = base64.b64decode(b64.data[0].embedding)
    decoded = struct.unpack(f"<{len(raw) // 4}f", raw)
    assert list(decoded) == pytest.approx(vec, abs=1e-6)
    with pytest.raises(BadRequestError) as err:
        client.embeddings.create(input="x", model="")
    assert err.value.status == 400 and "model" in err.value.message


def test_reembed_similar_and_jobs(client, agent_id):
    m = client.memories.create(agent_id=agent_id, type="note", content={"content": "a puppy named Rex"})
    re = client.embeddings.reembed(agent_id=agent_id, memory_type="notes", memory_id=m.id)
    assert re.memory_id == m.id and re.new_model and re.reembedded_at is not None

    vec = client.embeddings.generate("puppy").embedding
    hits = client.embeddings.similar(agent_id=agent_id, embedding=vec, limit=5)
    assert hits[0].id == m.id and hits[0].content["content"] == "a puppy named Rex"
    with pytest.raises(BadRequestError):
        client.embeddings.similar(agent_id=agent_id, embedding=[0.1, 0.2])

    job = client.embeddings.bulk_reembed(agent_id=agent_id)
    assert job.job_id and job.agent_id == agent_id
    deadline = time.monotonic() + 30
    got = client.embeddings.jobs.get(job.job_id)
    while not got.done and time.monotonic() < deadline:
        time.sleep(0.05)
        got = client.embeddings.jobs.get(job.job_id)
    assert got.status == "completed" and got.memories_processed == 1
    with pytest.raises(ConflictError):
        client.embeddings.jobs.cancel(job.job_id)
    with pytest.raises(NotFoundError):
        client.embeddings.jobs.get("job_does_not_exist")
