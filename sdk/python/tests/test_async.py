"""AsyncEngram: the same namespaces, awaited, with async iteration."""

from __future__ import annotations

import asyncio

import pytest

from engram import AsyncEngram, NotFoundError, RateLimitError


@pytest.mark.asyncio
async def test_async_client_routes(server, api_key, agent_id):
    async with AsyncEngram(api_key=api_key, base_url=server.api_url) as client:
        assert (await client.auth.status()).authenticated
        created = await asyncio.gather(
            *(client.memories.create(agent_id=agent_id, type="note", content={"content": f"puppy {i}"}) for i in range(5))
        )
        assert len({c.id for c in created}) == 5
        assert client.last_consistency_token
        await client.wait_visible()
        seen = [m.id async for m in client.memories.iter(agent_id=agent_id, page_size=2)]
        assert sorted(seen) == sorted(c.id for c in created)
        hits = await client.search(agent_id=agent_id, query="puppy", limit=3)
        assert len(hits.results) == 3
        agents = [a.agent_id async for a in client.agents.iter()]
        assert agents == [agent_id]
        assert (await client.embeddings.generate("puppy")).dimensions > 0
        assert (await client.keys.list())[0].name == "default"
        assert (await client.health())["status"] == "ok"
        with pytest.raises(NotFoundError):
            await client.memories.get("missing")
        await client.memories.forget(created[0].id)
        assert (await client.memories.recover(created[0].id)).forgotten is False


@pytest.mark.asyncio
async def test_async_retries_429(limited_server):
    key = limited_server.register()
    async with AsyncEngram(api_key=key, base_url=limited_server.api_url, max_retries=3) as client:
        for _ in range(3):
            assert (await client.auth.status()).authenticated
    async with AsyncEngram(api_key=key, base_url=limited_server.api_url, max_retries=0) as client:
        with pytest.raises(RateLimitError):
            for _ in range(3):
                await client.auth.status()
