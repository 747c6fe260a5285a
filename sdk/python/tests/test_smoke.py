def test_smoke(client, agent_id):
    m = client.memories.create(agent_id=agent_id, type="notes", content={"content": "the cat sat"})
    assert m.type == "note"
    got = client.memories.get(m.id)
    assert got.content["content"] == "the cat sat"
    r = client.search(agent_id=agent_id, query="cat")
    assert r.results[0].id == m.id
