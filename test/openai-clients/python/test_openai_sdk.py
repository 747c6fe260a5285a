"""The official OpenAI Python SDK against a real Engram: the server and the
key come from ENGRAM_BASE_URL (…/v1) and ENGRAM_API_KEY, set by
internal/cli's TestOfficialOpenAISDKs."""

import base64
import os
import struct

import openai
import pytest

BASE_URL = os.environ["ENGRAM_BASE_URL"]
API_KEY = os.environ["ENGRAM_API_KEY"]


@pytest.fixture
def client():
    return openai.OpenAI(api_key=API_KEY, base_url=BASE_URL, max_retries=0)


def test_models_list_names_models_that_embed(client):
    models = list(client.models.list())
    assert models, "no model listed"
    for m in models:
        assert m.object == "model" and m.owned_by and isinstance(m.created, int)
        res = client.embeddings.create(model=m.id, input="coffee in the morning")
        assert res.model == m.id and len(res.data) == 1
    assert client.models.retrieve(models[0].id).id == models[0].id


def test_single_and_batch_float_and_base64(client):
    model = list(client.models.list())[0].id
    single = client.embeddings.create(model=model, input="rollback the release")
    assert single.object == "list" and single.data[0].index == 0
    assert single.usage.prompt_tokens > 0 and single.usage.total_tokens == single.usage.prompt_tokens
    texts = ["coffee in the morning", "rollback the release", "deploy on friday"]
    batch = client.embeddings.create(model=model, input=texts, encoding_format="float")
    assert [d.index for d in batch.data] == [0, 1, 2]
    # Without encoding_format the SDK fetches base64 and decodes float32s, which
    # equal the JSON floats as float32.
    assert batch.data[1].embedding == pytest.approx(single.data[0].embedding, rel=1e-6)
    # Explicit base64 comes back as the string, little-endian float32s; without
    # encoding_format the SDK asks for base64 itself and decodes it.
    b64 = client.embeddings.create(model=model, input=texts, encoding_format="base64")
    implicit = client.embeddings.create(model=model, input=texts)
    for i, d in enumerate(batch.data):
        raw = base64.b64decode(b64.data[i].embedding)
        assert list(struct.unpack("<%df" % (len(raw) // 4), raw)) == pytest.approx(d.embedding, rel=1e-6)
        assert implicit.data[i].embedding == pytest.approx(d.embedding, rel=1e-6)

def test_typed_errors(client):
    with pytest.raises(openai.AuthenticationError) as e:
        openai.OpenAI(api_key="wrong", base_url=BASE_URL, max_retries=0).models.list()
    assert e.value.status_code == 401 and e.value.code == "invalid_api_key"
    with pytest.raises(openai.NotFoundError) as e:
        client.embeddings.create(model="no-such-model", input="x")
    assert e.value.code == "model_not_found" and e.value.param == "model"
    with pytest.raises(openai.NotFoundError) as e:
        client.models.retrieve("no-such-model")
    assert e.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as e:
        client.embeddings.create(model="default", input=[[1, 2, 3]])
    assert e.value.param == "input" and e.value.type == "invalid_request_error"
    with pytest.raises(openai.BadRequestError) as e:
        client.embeddings.create(model="default", input="x", dimensions=0)
    assert e.value.param == "dimensions"
