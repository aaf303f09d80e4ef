"""Model access: one OpenAI-compatible chat client, its cache, transcript and decoding.

The front door other modules use:

- `ModelConfig(model, base_url, api_key, temperature=0.0, max_tokens=None,
  options={}, json_mode="schema", request_timeout=120.0, concurrency=4,
  cache=None, offline=False, log=None, max_retries=6, backoff=0.5,
  max_backoff=30.0)`; `repr` never shows the key.
- `ChatClient(config).chat(messages, *, schema=None, schema_name="answer",
  sample=0) -> Reply(text, usage, cached, ms, retries, finish_reason)`:
  thread-safe; json_mode fallback, retries, cache and log. `sample` (not in
  the original contract, an addition) separates repeated draws of one
  request in the cache, e.g. the attempts of a sampled method.
- `decode_pipeline(text, collections) -> {"collection", "pipeline"}` and
  `decode_json(text) -> dict`, tolerant, raising ModelBadOutputError.
- `chat_decoded(client, messages, decode, *, schema=None, ...) -> Decoded`:
  the at-most-2 "your reply was not valid JSON" repair turns every method uses.
- `pipeline_schema(collections)`: the response schema of a pipeline answer.
- `metered()`: per-record usage accounting (`Meter.as_dict()` is a
  prediction's `usage = {model_calls, prompt_tokens, completion_tokens,
  cache_hits, ms}`); `generate.run` meters every record.
- `default_cache_path()`: `$XDG_CACHE_HOME/nlq/llm.sqlite` or `~/.cache/nlq/llm.sqlite`.
"""

from nlq.llm.client import ChatClient, Reply
from nlq.llm.config import JSON_MODES, ModelConfig, default_cache_path
from nlq.llm.decode import Decoded, chat_decoded, decode_json, decode_pipeline, pipeline_schema
from nlq.llm.usage import Meter, metered

__all__ = ["ChatClient", "Reply", "ModelConfig", "JSON_MODES", "default_cache_path", "Decoded", "chat_decoded",
           "decode_json", "decode_pipeline", "pipeline_schema", "Meter", "metered"]
