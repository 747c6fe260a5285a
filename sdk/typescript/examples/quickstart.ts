// The README's quick start, type-checked by `npm run build` against the
// package's own declarations.
import { Engram, NotFoundError, WriteNotYetVisibleError, etag, type SearchResult } from "@engram-memory/client";

export async function quickstart(): Promise<SearchResult[]> {
  // apiKey defaults to ENGRAM_API_KEY, baseURL to ENGRAM_BASE_URL, else http://127.0.0.1:8080/v1
  const client = new Engram({ apiKey: process.env.ENGRAM_API_KEY, baseURL: "http://127.0.0.1:8080/v1" });

  try {
    await client.memories.create({
      agent_id: "claire",
      type: "notes",
      content: { content: "The billing service deploys on Tuesdays" },
    });
  } catch (e) {
    // Stored, not yet visible: wait for it instead of sending it again.
    if (e instanceof WriteNotYetVisibleError && e.consistencyToken) await client.waitVisible(e.consistencyToken);
    else throw e;
  }
  const { results } = await client.search({ agent_id: "claire", query: "when does billing deploy?" });
  for (const hit of results) console.log(hit.score, hit.type, hit.content);

  for await (const memory of client.memories.list({ agent_id: "claire" })) {
    await client.memories.update(memory.id, { tags: ["ops"], if_match: etag(memory) });
  }

  try {
    await client.memories.get("no-such-id", { timeout: 5_000 });
  } catch (e) {
    if (e instanceof NotFoundError) console.log(e.code, e.requestId, e.details);
  }
  return results;
}
